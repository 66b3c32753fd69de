'use strict';

// A gauge's `aggregator` across processes, as prom-client's
// AggregatorRegistry applies it to live workers: two processes set every
// kind of gauge, the exporter's page combines them, and once one of them
// exits only the other counts. `omit` stays off the exporter's page.

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { spawn } = require('child_process');
const h = require('./helpers');

const WRITER = `
const client = require('shmetrics');
const v = Number(process.env.VALUE);
for (const aggregator of ['sum', 'min', 'max', 'average', 'first', 'omit']) {
	new client.Gauge({ name: 'g_' + aggregator, help: 'h', aggregator }).set(v);
}
console.log('ready');
setInterval(() => {}, 1 << 30);
`;

function writer(store, value) {
	const p = spawn(process.execPath, ['-e', WRITER], {
		env: { ...process.env, SHMETRICS_STORE: store, VALUE: String(value) },
		stdio: ['ignore', 'pipe', 'inherit'],
	});
	return new Promise(resolve => p.stdout.once('data', () => resolve(p)));
}

function value(page, name) {
	const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(page);
	return m ? Number(m[1]) : undefined;
}

test('gauge aggregators over live processes', async t => {
	const store = path.join(h.tempDir('shmetrics-agg-'), 'store');
	const a = await writer(store, 2);
	const b = await writer(store, 6);
	t.after(() => [a, b].forEach(p => p.kill('SIGKILL')));
	const [port] = await h.freePorts(1);
	const exporter = h.serve(store, port);
	t.after(() => h.stop(exporter));
	await h.waitUp(port, '/metrics', exporter);

	let page = (await h.get(port, '/metrics')).body;
	assert.strictEqual(value(page, 'g_sum'), 8);
	assert.strictEqual(value(page, 'g_min'), 2);
	assert.strictEqual(value(page, 'g_max'), 6);
	assert.strictEqual(value(page, 'g_average'), 4);
	assert.strictEqual(value(page, 'g_first'), 6, 'the value set last');
	assert.strictEqual(value(page, 'g_omit'), undefined, 'omit stays off the page');

	b.kill('SIGKILL');
	await new Promise(r => b.once('exit', r));
	page = (await h.get(port, '/metrics')).body;
	for (const name of ['g_sum', 'g_min', 'g_max', 'g_average', 'g_first']) {
		assert.strictEqual(value(page, name), 2, `${name} counts only the live process`);
	}
});
