'use strict';

// A real cluster primary with 4 Express workers (Express from npm) counts
// every request, through a worker killed with SIGKILL mid-load: the
// exporter's page (`shmetrics serve`, a separate process) and the
// primary's AggregatorRegistry.clusterMetrics() must both show exactly the
// responses the client saw (a request in flight in the killed worker may
// be counted or not).

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const h = require('./helpers');

const REQUESTS = 2000;
const ROUTES = ['/', '/users'];

test('cluster: exact counts through a SIGKILL, on the exporter and in the primary', async t => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shmetrics-cluster-'));
	const store = path.join(dir, 'store');
	const [port, primaryPort, exporterPort] = await h.freePorts(3);
	const env = { ...process.env, SHMETRICS_STORE: store, PORT: port, PRIMARY_PORT: primaryPort, WORKERS: '4' };
	const app = spawn(process.execPath, [path.join(__dirname, 'app', 'cluster.js')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
	t.after(() => h.stop(app));
	await h.waitUp(port, '/', app);
	const exporter = h.serve(store, exporterPort);
	t.after(() => h.stop(exporter));
	await h.waitUp(exporterPort, '/metrics', exporter);

	let killed = false;
	const sent = await h.load(port, ROUTES, REQUESTS, 8, async done => {
		if (!killed && done >= REQUESTS / 2) {
			killed = true;
			const pid = Number((await h.get(port, '/pid')).body);
			process.kill(pid, 'SIGKILL');
		}
	});
	assert.ok(killed, 'a worker was killed mid-load');
	assert.ok(sent.ok >= REQUESTS - 50, `most requests succeeded: ${JSON.stringify(sent)}`);

	for (const [what, p] of [['exporter', exporterPort], ['primary', primaryPort]]) {
		const page = (await h.get(p, '/metrics')).body;
		// The app's routes only: the test's own GET /pid is counted too.
		const counted = ROUTES.reduce((n, route) => n + h.sum(page, 'http_requests_total', { route, code: '200' }), 0);
		assert.ok(
			counted >= sent.ok && counted <= sent.ok + sent.failed,
			`${what} counts ${counted}, the client saw ${sent.ok} responses and ${sent.failed} failures`,
		);
		const observed = ROUTES.reduce((n, route) => n + h.sum(page, 'http_request_duration_seconds_count', { route }), 0);
		assert.strictEqual(observed, counted, `${what}: one observation per counted request`);
		for (const route of ROUTES) {
			assert.ok(h.sum(page, 'http_requests_total', { route }) > 0, `${what} has route ${route}`);
		}
	}
});
