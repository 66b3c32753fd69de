'use strict';

// The Express app under PM2's cluster mode (pm2 from npm), 4 instances,
// started and stopped by the test: one instance killed with SIGKILL under
// load, then a `pm2 reload` under load. PM2 has no primary of the app's
// own; the exporter's page must show exactly the responses the client saw
// (a request in flight in a killed or reloaded instance may be counted or
// not).

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { execFileSync } = require('child_process');
const h = require('./helpers');

const ROUTES = ['/', '/users'];

function pm2(env, ...args) {
	const bin = require.resolve('pm2/bin/pm2');
	return execFileSync(process.execPath, [bin, ...args], { env, encoding: 'utf8', timeout: 60000 });
}

test('PM2 cluster mode: exact counts through a SIGKILL and a reload', async t => {
	const dir = h.tempDir('shmetrics-pm2-');
	const store = path.join(dir, 'store');
	const [port, exporterPort] = await h.freePorts(2);
	const env = { ...process.env, PM2_HOME: path.join(dir, 'pm2'), SHMETRICS_STORE: store, PORT: String(port) };
	t.after(() => {
		try {
			pm2(env, 'kill');
		} catch {
			// The daemon is gone already.
		}
	});
	pm2(env, 'start', path.join(__dirname, 'app', 'express.js'), '-i', '4', '--name', 'app', '--wait-ready', '--listen-timeout', '10000');
	await h.waitUp(port, '/', { exitCode: null });
	const exporter = h.serve(store, exporterPort);
	t.after(() => h.stop(exporter));
	await h.waitUp(exporterPort, '/metrics', exporter);
	// What the start counted (the GET / that found the app up).
	const start = (await h.get(exporterPort, '/metrics')).body;

	const total = { ok: 0, failed: 0 };
	const add = sent => {
		total.ok += sent.ok;
		total.failed += sent.failed;
	};
	let killed = false;
	add(
		await h.load(port, ROUTES, 1500, 8, async done => {
			if (!killed && done >= 700) {
				killed = true;
				process.kill(Number((await h.get(port, '/pid')).body), 'SIGKILL');
			}
		}),
	);
	assert.ok(killed);
	const reload = new Promise((resolve, reject) => {
		setTimeout(() => {
			try {
				resolve(pm2(env, 'reload', 'app'));
			} catch (e) {
				reject(e);
			}
		}, 200);
	});
	add(await h.load(port, ROUTES, 1500, 8));
	await reload;
	add(await h.load(port, ROUTES, 200, 4));
	assert.ok(total.ok >= 3000, `most requests succeeded: ${JSON.stringify(total)}`);

	const before = h.appCounts(start, ROUTES);
	const page = await h.pageWhen(exporterPort, pg => h.appCounts(pg, ROUTES).requests - before.requests >= total.ok);
	const now = h.appCounts(page, ROUTES);
	const n = now.requests - before.requests;
	assert.ok(
		n >= total.ok && n <= total.ok + total.failed,
		`the exporter counts ${n}, the client saw ${total.ok} responses and ${total.failed} failures`,
	);
	assert.strictEqual(now.observed - before.observed, n, 'one observation per counted request');
});
