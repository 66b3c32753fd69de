'use strict';

// The Express app of the req/s benchmark: a cluster of WORKERS workers on
// PORT, with one counter and one histogram per request in a middleware,
// through BENCH_LIB (prom-client or shmetrics), or none. BENCH_LIB=noop
// keeps the middleware but gives it metrics that do nothing, which tells
// what the middleware itself costs Express from what a library adds.

const cluster = require('cluster');

const WORKERS = Number(process.env.WORKERS || 4);
const lib = process.env.BENCH_LIB;

if (cluster.isPrimary) {
	if (lib !== 'none' && lib !== 'noop') new (require(lib).AggregatorRegistry)();
	for (let i = 0; i < WORKERS; i++) cluster.fork();
	process.on('SIGTERM', () => {
		for (const w of Object.values(cluster.workers)) w.kill();
		process.exit(0);
	});
} else {
	const express = require('express');
	const app = express();
	if (lib !== 'none') {
		const client = lib === 'noop' ? noopClient() : require(lib);
		new client.AggregatorRegistry();
		const requests = new client.Counter({ name: 'http_requests_total', help: 'h', labelNames: ['route', 'method', 'code'] });
		const duration = new client.Histogram({ name: 'http_request_duration_seconds', help: 'h', labelNames: ['route'] });
		app.use((req, res, next) => {
			const end = duration.startTimer({ route: req.path });
			res.on('finish', () => {
				requests.inc({ route: req.path, method: req.method, code: res.statusCode });
				end();
			});
			next();
		});
	}
	app.get('/', (req, res) => res.send('ok'));
	app.listen(Number(process.env.PORT), '127.0.0.1');
}

// Metrics with prom-client's shape whose calls do nothing.
function noopClient() {
	class Metric {
		inc() {}
		startTimer() {
			return () => 0;
		}
	}
	return { AggregatorRegistry: class {}, Counter: Metric, Histogram: Metric };
}
