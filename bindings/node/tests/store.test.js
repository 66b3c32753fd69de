'use strict';

// The store's faults as an app meets them: a store too small for its label
// sets counts the rest in each family's overflow series, and a store
// removed and created again under the same path is opened again, with
// every metric registered anew in it.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { tempDir } = require('./helpers');

const dir = tempDir('shmetrics-store-');
const client = require('shmetrics');
const { NativeStore } = require('shmetrics/native');

function page(file) {
	return new NativeStore(file).render(false);
}

test('a full store counts what does not fit in the overflow series', async () => {
	const file = path.join(dir, 'small');
	client.useStore(file, { maxSeries: 64 });
	const c = new client.Counter({ name: 'full_requests_total', help: 'h', labelNames: ['user'] });
	for (let i = 0; i < 200; i++) c.inc({ user: `u${i}` });
	const values = (await c.get()).values;
	assert.ok(values.length < 200, `${values.length} series in a store of 64`);
	const overflow = values.find(v => v.labels.shmetrics_overflow === 'true');
	assert.ok(overflow, 'an overflow series');
	assert.strictEqual(values.reduce((n, v) => n + v.value, 0), 200, 'nothing lost');
});

test('a store created again under the same path is opened again', async () => {
	const file = path.join(dir, 'replaced');
	client.useStore(file);
	const c = new client.Counter({ name: 'replaced_requests_total', help: 'h', labelNames: ['route'] });
	const g = new client.Gauge({ name: 'replaced_inflight', help: 'h' });
	c.inc({ route: '/' }, 5);
	g.set(3);
	fs.unlinkSync(file);
	// Another process (an exporter, a deploy) creates the new store.
	execFileSync(process.execPath, ['-e', `new (require('shmetrics/native').NativeStore)(${JSON.stringify(file)})`]);
	await new Promise(r => setTimeout(r, 1500));
	c.inc({ route: '/' }, 2);
	g.set(4);
	const text = page(file);
	assert.match(text, /^replaced_requests_total\{route="\/"\} 2$/m, text);
	assert.match(text, /^replaced_inflight 4$/m, text);
	assert.strictEqual((await c.get()).values[0].value, 2);
});

test('metrics made and dropped again and again are garbage, and their series ids are reused', () => {
	// In a process of its own, to call the garbage collector. Each round
	// makes 500 metrics of two label sets each and drops them (as a test
	// suite's registry.clear() does); without the ids given back, the last
	// metric's ids would be past 10,000. (Each metric's series are new
	// ones in the store, whose records a dropped metric does not give back:
	// the store has room for all 10,000.)
	const script = `
		const client = require('shmetrics');
		client.useStore(${JSON.stringify(path.join(dir, 'churn'))}, { maxSeries: 16384 });
		const registry = new client.Registry();
		let collected = 0;
		const watch = new FinalizationRegistry(() => collected++);
		(async () => {
			for (let round = 0; round < 10; round++) {
				for (let i = 0; i < 500; i++) {
					registry.clear();
					const c = new client.Counter({ name: 'churn_total', help: 'h', labelNames: ['a'], registers: [registry] });
					c.inc({ a: 'x' });
					c.inc({ a: String(i) });
					watch.register(c, 0);
				}
				for (let i = 0; i < 3; i++) {
					global.gc();
					await new Promise(r => setTimeout(r, 20));
				}
			}
			const last = registry.getSingleMetric('churn_total');
			const ids = [...last._byValues.values()].map(child => child.id);
			process.stdout.write(JSON.stringify({ collected, ids, value: (await last.get()).values[0].value }));
		})();
	`;
	const out = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '-e', script], { env: process.env }).toString());
	assert.ok(out.collected >= 4990, `${out.collected} of 5,000 dropped metrics collected`);
	assert.ok(Math.max(...out.ids) < 2000, `ids ${out.ids}: not reused`);
	assert.strictEqual(out.value, 1, 'the last metric counts from zero');
});
