'use strict';

require('./release-only');

// The in-process cost of express-app.js's metric calls for one request
// (startTimer, inc with three labels, end; the same calls in both of its
// shapes), without HTTP, through BENCH_LIB (the argument; "noop" for the
// same calls doing nothing).
//
// Warm: the best of 5 rounds of 1,000,000 requests' worth in a loop,
// every cache holding what the calls touch.
//
// Evicted (EVICT_MB, default "8 64"; "" for none): before each request,
// a walk over a buffer of that many MiB pushes the calls' code and data
// out of the caches, as an app's own work does between two requests (a
// server process's other code, and the other processes on its core);
// only the calls are timed, the best of 5 rounds of EVICT_REQUESTS
// (2,000) requests. 8 MiB leaves the shared L3 partly warm, 64 MiB
// nothing.

const lib = process.argv[2];
const client = require(lib === 'noop' ? './noop-client' : lib);
const requests = new client.Counter({ name: 'http_requests_total', help: 'h', labelNames: ['route', 'method', 'code'] });
const duration = new client.Histogram({ name: 'http_request_duration_seconds', help: 'h', labelNames: ['route'] });

function oneRequest() {
	const end = duration.startTimer({ route: '/' });
	requests.inc({ route: '/', method: 'GET', code: 200 });
	end();
}

function warm() {
	const n = 1_000_000;
	let best = Infinity;
	for (let round = 0; round < 5; round++) {
		const start = process.hrtime.bigint();
		for (let i = 0; i < n; i++) oneRequest();
		best = Math.min(best, Number(process.hrtime.bigint() - start) / n);
	}
	return best;
}

function evicted(mib) {
	const buffer = new Float64Array(mib * 131072);
	// One write per 64-byte line, so that every line of the buffer is
	// read and dirtied.
	const evict = () => {
		for (let i = 0; i < buffer.length; i += 8) buffer[i] += 1;
	};
	const n = Number(process.env.EVICT_REQUESTS || 2000);
	let best = Infinity;
	for (let round = 0; round < 5; round++) {
		let total = 0n;
		for (let i = 0; i < n; i++) {
			evict();
			const start = process.hrtime.bigint();
			oneRequest();
			total += process.hrtime.bigint() - start;
		}
		best = Math.min(best, Number(total) / n);
	}
	return best;
}

const us = ns => `${(ns / 1000).toFixed(2)} us`;
const parts = [`warm ${us(warm())}`];
for (const mib of (process.env.EVICT_MB ?? '8 64').split(/\s+/).filter(Boolean)) {
	parts.push(`caches evicted (${mib} MiB) ${us(evicted(Number(mib)))}`);
}
console.log(`${lib}: the metric calls per request, in process: ${parts.join(', ')}`);
