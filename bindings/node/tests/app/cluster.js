'use strict';

// A cluster primary with WORKERS workers running app/express.js on PORT.
// The primary re-forks a worker that dies, and serves AggregatorRegistry.clusterMetrics() on
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
	require('./express');
}
