'use strict';

// An Express app (Express from npm) that counts its requests in a
// middleware, as apps instrumented with prom-client do, after the one-line
// switch to shmetrics. Started as a cluster worker (app/cluster.js) or by
// PM2 in cluster mode; it listens on PORT.

const express = require('express');
const client = require('shmetrics');

const requests = new client.Counter({
	name: 'http_requests_total',
	help: 'Requests by route and status.',
	labelNames: ['route', 'code'],
});
const duration = new client.Histogram({
	name: 'http_request_duration_seconds',
	help: 'Request duration.',
	labelNames: ['route'],
});

const app = express();
app.use((req, res, next) => {
	const end = duration.startTimer({ route: req.path });
	res.on('finish', () => {
		requests.inc({ route: req.path, code: res.statusCode });
		end();
	});
	next();
});
app.get('/', (req, res) => res.send('ok'));
app.get('/users', (req, res) => res.send('users'));
app.get('/pid', (req, res) => res.send(String(process.pid)));

const server = app.listen(Number(process.env.PORT), '127.0.0.1', () => {
	// PM2 waits for this with wait_ready before it stops the old worker
	// of a reload.
	if (process.send) process.send('ready');
});
process.on('SIGINT', () => server.close(() => process.exit(0)));
