'use strict';

// express-prom-bundle (from npm), a library built on prom-client, in a
// cluster of WORKERS workers on PORT, unchanged: its `require('prom-client')`
// finds this package, installed under that name (NODE_PATH, as
// bindings/node/suite/run.js sets up target/node-suite/alias). The
// primary serves nothing; `shmetrics serve` does.

const cluster = require('cluster');

const WORKERS = Number(process.env.WORKERS || 4);

if (cluster.isPrimary) {
	for (let i = 0; i < WORKERS; i++) cluster.fork();
	cluster.on('exit', () => {
		if (!process.exitCode) cluster.fork();
	});
	process.on('SIGTERM', () => {
		process.exitCode = 0;
		for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
		process.exit(0);
	});
} else {
	const express = require('express');
	const promBundle = require('express-prom-bundle');
	const app = express();
	app.use(promBundle({ includeMethod: true, includePath: true, autoregister: false }));
	app.get('/', (req, res) => res.send('ok'));
	app.get('/users', (req, res) => res.send('users'));
	app.get('/pid', (req, res) => res.send(String(process.pid)));
	app.listen(Number(process.env.PORT), '127.0.0.1');
}
