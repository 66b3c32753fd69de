'use strict';

// A cluster primary with WORKERS Express workers (PORT), each counting its
// requests in a middleware, as an app instrumented with prom-client does,
// after the one-line switch to shmetrics. The primary re-forks a worker
// that dies, and serves AggregatorRegistry.clusterMetrics() on
// PRIMARY_PORT: with shmetrics it reads the store, with no IPC.

const cluster = require('cluster');
const http = require('http');
const client = require('shmetrics');

const WORKERS = Number(process.env.WORKERS || 4);

if (cluster.isPrimary) {
	const aggregator = new client.AggregatorRegistry();
	for (let i = 0; i < WORKERS; i++) cluster.fork();
	cluster.on('exit', (worker, code, signal) => {
		if (!process.exitCode) cluster.fork();
		console.error(`worker ${worker.process.pid} exited (${signal || code})`);
	});
	http
		.createServer(async (req, res) => {
			res.setHeader('Content-Type', aggregator.contentType);
			res.end(await aggregator.clusterMetrics());
		})
		.listen(Number(process.env.PRIMARY_PORT), '127.0.0.1');
	process.on('SIGTERM', () => {
		process.exitCode = 0;
		for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
		process.exit(0);
	});
} else {
	const express = require('express');
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
	app.listen(Number(process.env.PORT), '127.0.0.1');
}
