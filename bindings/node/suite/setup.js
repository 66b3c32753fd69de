'use strict';

// Jest runs this before each test file: every file gets a store of its own,
// as a fresh prom-client module has no metrics.

const fs = require('fs');
const os = require('os');
const path = require('path');

// Under the folder run.js removes after the run, else the temporary one.
const base = process.env.SHMETRICS_JEST_STORES || os.tmpdir();
const dir = fs.mkdtempSync(path.join(base, 'shmetrics-jest-'));
process.env.SHMETRICS_STORE = path.join(dir, 'store');
