'use strict';

// Bad input gets a thrown ShmetricsError (the package's own class, an
// Error) with the core's error kind as `code`, and the process goes on.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

process.env.SHMETRICS_STORE = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'shmetrics-errors-')), 'store');
const client = require('shmetrics');

function throwsCode(fn, code) {
	assert.throws(fn, err => {
		assert.ok(err instanceof client.ShmetricsError, `${err} is a ShmetricsError`);
		assert.ok(err instanceof Error);
		assert.strictEqual(err.code, code, err.message);
		return true;
	});
}

test('label names and counts', () => {
	const c = new client.Counter({ name: 'e_requests_total', help: 'h', labelNames: ['route'] });
	throwsCode(() => c.inc({ nope: 'x' }), 'InvalidName');
	throwsCode(() => c.labels('a', 'b'), 'LabelCount');
	c.inc({ route: '/' });
});

test('values the store refuses', () => {
	const g = new client.Gauge({ name: 'e_gauge', help: 'h' });
	throwsCode(() => g.set(NaN), 'InvalidValue');
	throwsCode(() => g.inc(NaN), 'InvalidValue');
	const h = new client.Histogram({ name: 'e_histogram', help: 'h' });
	assert.throws(() => h.observe(NaN), TypeError);
	g.set(2);
});

test('a definition another process holds', () => {
	// Another worker defined e_shared as a gauge.
	execFileSync(process.execPath, ['-e', "new (require('shmetrics').Gauge)({ name: 'e_shared', help: 'h' })"], {
		env: process.env,
	});
	throwsCode(() => new client.Counter({ name: 'e_shared', help: 'h' }), 'Conflict');
	assert.strictEqual(client.register.getSingleMetric('e_shared'), undefined);
});

test('the store lives on after errors', async () => {
	const c = client.register.getSingleMetric('e_requests_total');
	assert.strictEqual((await c.get()).values[0].value, 1);
	const g = client.register.getSingleMetric('e_gauge');
	assert.strictEqual((await g.get()).values[0].value, 2);
});
