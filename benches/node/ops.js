'use strict';

require('./release-only');

// Per-operation cost in one process, prom-client and shmetrics in the same
// run: labels().inc(), inc(labels) and observe(labels) over 100 label sets.
// Prints ns per call and the ratio. Run: benches/node/run.sh

const { performance } = require('perf_hooks');

const N = Number(process.env.N || 2_000_000);
const ROUTES = Array.from({ length: 100 }, (_, i) => `/route/${i}`);

function measure(fn) {
	for (let i = 0; i < N / 10; i++) fn(i); // warm up
	let best = Infinity;
	for (let round = 0; round < 5; round++) {
		const t0 = performance.now();
		for (let i = 0; i < N; i++) fn(i);
		best = Math.min(best, ((performance.now() - t0) * 1e6) / N);
	}
	return best;
}

function cases(client, prefix) {
	const counter = new client.Counter({ name: `${prefix}_requests_total`, help: 'h', labelNames: ['route', 'method'] });
	const histogram = new client.Histogram({ name: `${prefix}_duration_seconds`, help: 'h', labelNames: ['route'] });
	return {
		'labels().inc()': i => counter.labels(ROUTES[i % 100], 'GET').inc(),
		'inc(labels)': i => counter.inc({ route: ROUTES[i % 100], method: 'GET' }),
		'observe(labels)': i => histogram.observe({ route: ROUTES[i % 100] }, (i % 1000) / 1000),
	};
}

const prom = cases(require('prom-client'), 'prom');
const ours = cases(require('shmetrics'), 'shm');
console.log(`per call, best of 5 rounds of ${N} calls (ns)`);
console.log('operation          prom-client  shmetrics  ratio');
for (const name of Object.keys(prom)) {
	const a = measure(prom[name]);
	const b = measure(ours[name]);
	console.log(`${name.padEnd(18)} ${a.toFixed(1).padStart(11)} ${b.toFixed(1).padStart(10)}  ${(b / a).toFixed(2)}x`);
}
