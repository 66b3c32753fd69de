'use strict';

// Timers record what prom-client's record: a timer's end takes its
// start's labels merged with its own (prom-client copies them with
// `Object.assign({}, start, end)`; this package passes a plain start
// object on as it is when the end adds none). The same calls through
// prom-client (from npm) and through this package give the same series
// and counts, for a start object changed between timers, end labels, and
// a start object whose labels are inherited (which a copy drops); and
// the store holds the series that this package's get() reports.

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { tempDir } = require('./helpers');

const ours = require('shmetrics');
const peer = require('prom-client');
const { NativeStore } = require('shmetrics/native');

const file = path.join(tempDir('shmetrics-timers-'), 'store');
ours.useStore(file);

/** The label sets of `series` on the store's page, empty values left out. */
function stored(series) {
	const page = new NativeStore(file).render(false);
	const sets = [];
	for (const line of page.split('\n')) {
		const m = line.match(/^(\w+)(?:\{(.*)\})? \S+$/);
		if (!m || m[1] !== series) continue;
		const labels = {};
		for (const [, k, v] of (m[2] || '').matchAll(/(\w+)="([^"]*)"/g)) if (v !== '') labels[k] = v;
		sets.push(JSON.stringify(labels));
	}
	return sets.sort();
}

/** Runs `calls` on a new metric of `kind` from `client`; its series and counts. */
async function run(client, kind, calls) {
	const name = `timer_${kind.toLowerCase()}_${run.count++}`;
	const registers = [new client.Registry()];
	const metric = new client[kind]({ name, help: 'h', labelNames: ['route', 'code'], registers });
	calls(metric);
	run.last = kind === 'Gauge' ? name : `${name}_count`;
	const values = (await metric.get()).values
		.filter(v => kind === 'Gauge' || v.metricName === `${name}_count`)
		.map(v => ({ labels: { ...v.labels }, n: kind === 'Gauge' ? typeof v.value : v.value }));
	return values.sort((a, b) => JSON.stringify(a.labels).localeCompare(JSON.stringify(b.labels)));
}
run.count = 0;

function calls(metric) {
	const start = { route: '/a' };
	metric.startTimer(start)();
	start.route = '/b';
	metric.startTimer(start)();
	metric.startTimer(start)({ code: '500' });
	assert.deepStrictEqual(start, { route: '/b' }, 'the start object is left as it was');
	const inherited = Object.create({ route: '/inherited' });
	inherited.code = '200';
	metric.startTimer(inherited)();
	metric.startTimer()({ route: '/end' });
	metric.startTimer(null)();
}

for (const kind of ['Histogram', 'Summary', 'Gauge']) {
	test(`${kind}: a timer's labels are prom-client's`, async () => {
		const theirs = await run(peer, kind, calls);
		const mine = await run(ours, kind, calls);
		assert.ok(theirs.length >= 5, JSON.stringify(theirs));
		assert.deepStrictEqual(mine, theirs);
		const reported = mine.map(v => JSON.stringify(Object.fromEntries(Object.entries(v.labels).map(([k, x]) => [k, String(x)]))));
		assert.deepStrictEqual(stored(run.last), reported.sort(), 'the store holds what get() reports');
	});
}
