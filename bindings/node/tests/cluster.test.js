'use strict';

// A real cluster primary with 4 Express workers (Express from npm) counts
// every request, through a worker killed with SIGKILL mid-load: the
// exporter's page (`shmetrics serve`, a separate process) and the
// primary's AggregatorRegistry.clusterMetrics() must both show exactly the
// responses the client saw (a request in flight in the killed worker may
// be counted or not).

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const h = require('./helpers');

const REQUESTS = 2000;
const ROUTES = ['/', '/users'];

test('cluster: exact counts through a SIGKILL, on the exporter and in the primary', async t => {
	const dir = h.tempDir('shmetrics-cluster-');
	const store = path.join(dir, 'store');
	const [primaryPort] = await h.freePorts(1);
	const { port, exporterPort } = await h.startApp(t, 'cluster.js', store, { PRIMARY_PORT: String(primaryPort), WORKERS: '4' });
	const pages = [['exporter', exporterPort], ['primary', primaryPort]];
	// What the start counted (the GET / that found the app up), on each page.
	const before = {};
	for (const [what, p] of pages) before[what] = h.appCounts((await h.get(p, '/metrics')).body, ROUTES);
	const sent = await h.loadWithKill(port, ROUTES, REQUESTS, REQUESTS / 2);
	assert.ok(sent.ok >= REQUESTS - 50, `most requests succeeded: ${JSON.stringify(sent)}`);

	for (const [what, p] of pages) {
		const page = await h.pageWhen(p, pg => h.appCounts(pg, ROUTES).requests - before[what].requests >= sent.ok);
		const now = h.appCounts(page, ROUTES);
		const counted = now.requests - before[what].requests;
		assert.ok(
			counted >= sent.ok && counted <= sent.ok + sent.failed,
			`${what} counts ${counted}, the client saw ${sent.ok} responses and ${sent.failed} failures`,
		);
		assert.strictEqual(now.observed - before[what].observed, counted, `${what}: one observation per counted request`);
		for (const route of ROUTES) {
			assert.ok(h.sum(page, 'http_requests_total', { route }) > 0, `${what} has route ${route}`);
		}
	}
});
