'use strict';

// The in-process cost of express-app.js's metric calls for one request
// (startTimer, inc with three labels, end; the same calls in both of its
// shapes), without HTTP: the best of 5 rounds of 1,000,000 requests'
// worth, through BENCH_LIB (the argument).

const lib = process.argv[2];
const client = require(lib);
const requests = new client.Counter({ name: 'http_requests_total', help: 'h', labelNames: ['route', 'method', 'code'] });
const duration = new client.Histogram({ name: 'http_request_duration_seconds', help: 'h', labelNames: ['route'] });

function oneRequest() {
	const end = duration.startTimer({ route: '/' });
	requests.inc({ route: '/', method: 'GET', code: 200 });
	end();
}

const n = 1_000_000;
let best = Infinity;
for (let round = 0; round < 5; round++) {
	const start = process.hrtime.bigint();
	for (let i = 0; i < n; i++) oneRequest();
	best = Math.min(best, Number(process.hrtime.bigint() - start) / n);
}
console.log(`${lib}: the metric calls take ${(best / 1000).toFixed(2)} us per request in process`);
