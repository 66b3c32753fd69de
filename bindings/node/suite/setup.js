'use strict';

// Jest runs this before each test file: every file gets a store of its own,
// as a fresh prom-client module has no metrics.

const fs = require('fs');
const os = require('os');
const path = require('path');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shmetrics-jest-'));
process.env.SHMETRICS_STORE = path.join(dir, 'store');
