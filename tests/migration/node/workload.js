'use strict';

// The migration workload for prom-client (tests/migration/test_prom_client.py):
//   node workload.js MODE REQUESTS OUT
// MODE prom-client-cluster: a cluster primary and 2 workers on prom-client;
//   the primary writes AggregatorRegistry.clusterMetrics() to OUT.
// MODE prom-client-single: one process on prom-client; register.metrics().
// MODE shmetrics: the same cluster after the one-line switch; the workers
//   write to the store ($SHMETRICS_STORE) and the primary writes its own
//   clusterMetrics() to OUT.
// The processes stay up (gauges count live workers) until SIGTERM; OUT
// appears once the page is written. The library comes from NODE_PATH.

const cluster = require('cluster');
const fs = require('fs');

const [mode, requestsArg, out] = process.argv.slice(2);
const REQUESTS = Number(requestsArg);
const WORKERS = mode === 'prom-client-single' ? 1 : 2;
const lib = mode === 'shmetrics' ? 'shmetrics' : 'prom-client';
const client = require(lib);
const aggregator = new client.AggregatorRegistry();

/** The app's metrics, as an app defines them for prom-client. */
function metrics() {
	return {
		requests: new client.Counter({
			name: 'myapp_http_requests_total',
			help: 'HTTP requests by method, route and status.',
			labelNames: ['method', 'route', 'code'],
		}),
		jobs: new client.Counter({ name: 'myapp_jobs', help: 'Jobs run (named without _total).' }),
		inflight: new client.Gauge({ name: 'myapp_inflight', help: 'Requests in flight.', labelNames: ['route'] }),
		temperature: new client.Gauge({ name: 'myapp_temperature_celsius', help: 'Hottest worker.', aggregator: 'max' }),
		duration: new client.Histogram({
			name: 'myapp_http_request_duration_seconds',
			help: 'Request duration.',
			labelNames: ['route'],
		}),
		batch: new client.Histogram({ name: 'myapp_batch_size', help: 'Items per batch.', buckets: [1, 2, 5, 10, 50] }),
		odd: new client.Counter({
			name: 'myapp_label_values_total',
			help: 'Label values with quotes, a backslash, a newline, UTF-8, and empty.',
			labelNames: ['value'],
		}),
		size: new client.Summary({ name: 'myapp_response_bytes', help: 'Response sizes.', percentiles: [0.5, 0.9, 0.99] }),
	};
}

/** Writer `k` of `n`: its share of REQUESTS, the same in every mode. */
function work(m, k, n) {
	const routes = ['/', '/users', '/orders'];
	for (let i = k; i < REQUESTS; i += n) {
		const route = routes[i % 3];
		const code = i % 7 === 0 ? 404 : 200;
		m.requests.inc({ method: i % 5 === 0 ? 'POST' : 'GET', route, code });
		m.duration.observe({ route }, (i % 40) / 100);
		m.size.observe(100 * (i % 10));
		if (i % 10 === 0) m.jobs.inc(2.5);
		if (i % 3 === 0) m.batch.observe(i % 12);
	}
	for (const value of ['say "hi"', 'back\\slash', 'new\nline', 'grüße, 世界', '']) {
		m.odd.inc({ value }, k + 0.5);
	}
	m.inflight.set({ route: '/users' }, k + 1);
	m.temperature.set(40 + k);
}

function write(page) {
	fs.writeFileSync(`${out}.tmp`, page);
	fs.renameSync(`${out}.tmp`, out);
}

if (mode === 'prom-client-single') {
	const m = metrics();
	for (let k = 0; k < 2; k++) work(m, k, 2);
	m.inflight.set({ route: '/users' }, 3);
	m.temperature.set(41);
	client.register.metrics().then(write);
	setInterval(() => {}, 1 << 30);
} else if (cluster.isPrimary) {
	const pids = [];
	let done = 0;
	for (let k = 0; k < WORKERS; k++) {
		const w = cluster.fork({ WRITER: String(k) });
		pids.push(w.process.pid);
		w.on('message', async msg => {
			if (msg !== 'done' || ++done < WORKERS) return;
			write(await aggregator.clusterMetrics());
		});
	}
	process.on('SIGTERM', () => {
		for (const w of Object.values(cluster.workers)) w.kill();
		process.exit(0);
	});
} else {
	work(metrics(), Number(process.env.WRITER), WORKERS);
	process.send('done');
	setInterval(() => {}, 1 << 30);
}
