'use strict';

// Bad input gets a thrown ShmetricsError (the package's own class, an
// Error) with the core's error kind as `code`, and the process goes on.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { tempDir } = require('./helpers');

process.env.SHMETRICS_STORE = path.join(tempDir('shmetrics-errors-'), 'store');
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

test('a name made again and again with other definitions leaves no file and reuses its stores', async () => {
	// Three definitions of one name, in turn, each metric made after
	// `register.clear()` as a test suite would: the first goes to the
	// shared store, the two others (which conflict with it) to stores of
	// the process's own, made once each, however many times they come back.
	const kinds = [
		() => new client.Counter({ name: 'e_again', help: 'h' }),
		() => new client.Gauge({ name: 'e_again', help: 'h' }),
		() => new client.Counter({ name: 'e_again', help: 'h', labelNames: ['a'] }),
	];
	for (let i = 0; i < 60; i++) {
		client.register.clear();
		const m = kinds[i % kinds.length]();
		m.inc(m.labelNames.length ? { a: 'x' } : 1);
		const values = (await m.get()).values;
		assert.deepStrictEqual(values.map(v => v.value), [1], `round ${i}: a new metric starts from zero`);
	}
	const own = `shmetrics-node-${process.pid}-`;
	const mapped = new Set(
		fs.readFileSync('/proc/self/maps', 'utf8')
			.split('\n')
			.filter(l => l.includes(own))
			.map(l => l.slice(l.indexOf('/'))),
	);
	assert.strictEqual(mapped.size, 2, [...mapped].join('\n'));
	for (const p of mapped) assert.ok(p.endsWith(' (deleted)'), `${p}: unlinked once open`);
	for (const dir of ['/dev/shm', os.tmpdir()]) {
		assert.deepStrictEqual(fs.readdirSync(dir).filter(f => f.startsWith(own)), [], `left in ${dir}`);
	}
	client.register.clear();
});
