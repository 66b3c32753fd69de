'use strict';

// A library built on prom-client, express-prom-bundle (from npm), used
// unchanged in a cluster of 4 Express workers with this package installed
// as `prom-client`: the exporter counts every response through a SIGKILL.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const h = require('./helpers');

const ROUTES = ['/', '/users'];
const ALIAS = path.join(process.env.NODE_PATH || '', '..', 'alias', 'node_modules');

test('express-prom-bundle on shmetrics as prom-client: exact counts through a SIGKILL', async t => {
	assert.ok(fs.existsSync(path.join(ALIAS, 'express-prom-bundle')), `express-prom-bundle under ${ALIAS}`);
	assert.strictEqual(
		fs.realpathSync(path.join(ALIAS, 'prom-client')),
		fs.realpathSync(path.join(__dirname, '..')),
		'prom-client is this package',
	);
	const store = path.join(h.tempDir('shmetrics-bundle-'), 'store');
	const { port, exporterPort } = await h.startApp(t, 'bundle.js', store, { NODE_PATH: ALIAS });
	const countIn = page =>
		ROUTES.reduce(
			(n, route) => n + h.sum(page, 'http_request_duration_seconds_count', { path: route, status_code: '200', method: 'GET' }),
			0,
		);
	// What the start counted (the GET / that found the app up).
	const before = countIn((await h.get(exporterPort, '/metrics')).body);
	const sent = await h.loadWithKill(port, ROUTES, 1500, 700);
	assert.ok(sent.ok >= 1400, JSON.stringify(sent));
	const page = await h.pageWhen(exporterPort, pg => countIn(pg) - before >= sent.ok);
	const counted = countIn(page) - before;
	assert.ok(
		counted >= sent.ok && counted <= sent.ok + sent.failed,
		`the exporter counts ${counted}, the client saw ${sent.ok} responses and ${sent.failed} failures`,
	);
	assert.match(page, /^# TYPE http_request_duration_seconds histogram$/m);
	assert.match(page, /^http_request_duration_seconds_bucket\{.*le="0\.003".*\} \d+$/m, 'its bounds, as JavaScript writes them');
});
