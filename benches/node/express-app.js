'use strict';

require('./release-only');

// The Express app of the req/s benchmark: a cluster of WORKERS workers on
// PORT, with one counter and one histogram per request, through BENCH_LIB
// (prom-client or shmetrics), or none. BENCH_LIB=noop gives the same code
// metrics that do nothing, which tells what the shape of the code costs
// Express from what a library adds. BENCH_SHAPE says where the metric
// calls are made (every library runs the same code):
// - middleware (the default): an app.use() middleware starts the timer and
//   counts in a res.on('finish') listener, as hand-written metric
//   middlewares do (express-prom-bundle does the same through on-finished);
// - handler: the route handler starts the timer, sends, then counts and
//   stops the timer itself, with no extra middleware or listener.
// With BENCH_LIB=none both shapes are the same app.

const cluster = require('cluster');

const WORKERS = Number(process.env.WORKERS || 4);
const lib = process.env.BENCH_LIB;
const shape = process.env.BENCH_SHAPE || 'middleware';
if (shape !== 'middleware' && shape !== 'handler') throw new Error(`BENCH_SHAPE: ${shape}: not middleware or handler`);

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
	if (lib === 'none') {
		app.get('/', (req, res) => res.send('ok'));
	} else {
		const client = require(lib === 'noop' ? './noop-client' : lib);
		new client.AggregatorRegistry();
		const requests = new client.Counter({ name: 'http_requests_total', help: 'h', labelNames: ['route', 'method', 'code'] });
		const duration = new client.Histogram({ name: 'http_request_duration_seconds', help: 'h', labelNames: ['route'] });
		if (shape === 'middleware') {
			app.use((req, res, next) => {
				const end = duration.startTimer({ route: req.path });
				res.on('finish', () => {
					requests.inc({ route: req.path, method: req.method, code: res.statusCode });
					end();
				});
				next();
			});
			app.get('/', (req, res) => res.send('ok'));
		} else {
			app.get('/', (req, res) => {
				const end = duration.startTimer({ route: req.path });
				res.send('ok');
				requests.inc({ route: req.path, method: req.method, code: res.statusCode });
				end();
			});
		}
	}
	app.listen(Number(process.env.PORT), '127.0.0.1');
}
