'use strict';

require('./release-only');

// A scrape of 10,000 series in each of 16 cluster workers, prom-client and
// shmetrics in the same run: prom-client's AggregatorRegistry asks every
// worker over IPC and merges on the primary's event loop; with shmetrics
// the exporter (`shmetrics serve`, SHMETRICS_BIN) reads the store, and the
// primary's clusterMetrics() reads it too. Prints the time per scrape and
// the primary's event-loop delay while it is scraped
// (perf_hooks.monitorEventLoopDelay). Run: benches/node/run.sh

const cluster = require('cluster');
const http = require('http');
const { spawn } = require('child_process');
const { monitorEventLoopDelay, performance } = require('perf_hooks');

const WORKERS = Number(process.env.WORKERS || 16);
const SERIES = Number(process.env.SERIES || 10000);
const SCRAPES = Number(process.env.SCRAPES || 5);
const lib = process.env.BENCH_LIB;

function get(port) {
	return new Promise((resolve, reject) => {
		http
			.get({ host: '127.0.0.1', port, path: '/metrics' }, res => {
				let n = 0;
				res.on('data', c => (n += c.length));
				res.on('end', () => resolve(n));
			})
			.on('error', reject);
	});
}

/**
 * `fn()` SCRAPES times, each answering [ms, bytes], with the primary's
 * event-loop delay measured throughout (a pause between scrapes lets the
 * monitor see a scrape that blocked the loop).
 */
async function timed(fn) {
	const delay = monitorEventLoopDelay({ resolution: 1 });
	delay.enable();
	const times = [];
	let bytes = 0;
	for (let i = 0; i < SCRAPES; i++) {
		const [ms, n] = await fn();
		times.push(ms);
		bytes = n;
		await new Promise(r => setTimeout(r, 20));
	}
	delay.disable();
	times.sort((a, b) => a - b);
	return { median: times[times.length >> 1], bytes, maxDelay: delay.max / 1e6 };
}

function row(name, r) {
	console.log(`${name.padEnd(52)} ${r.median.toFixed(1).padStart(9)} ms ${String(r.bytes).padStart(10)} B  loop delay max ${r.maxDelay.toFixed(1)} ms`);
}

async function primary() {
	const client = require(lib);
	const aggregator = new client.AggregatorRegistry();
	for (let i = 0; i < WORKERS; i++) cluster.fork();
	let ready = 0;
	await new Promise(resolve => cluster.on('message', (w, m) => m === 'ready' && ++ready === WORKERS && resolve()));
	const results = {};
	results.cluster = await timed(async () => {
		const t0 = performance.now();
		const page = await aggregator.clusterMetrics();
		return [performance.now() - t0, page.length];
	});
	if (lib === 'shmetrics') {
		const port = Number(process.env.EXPORTER_PORT);
		const exporter = spawn(process.env.SHMETRICS_BIN, ['serve', '--store', process.env.SHMETRICS_STORE, '--web.listen-address', `127.0.0.1:${port}`], { stdio: 'ignore' });
		for (let i = 0; i < 100; i++) {
			try {
				await get(port);
				break;
			} catch {
				await new Promise(r => setTimeout(r, 100));
			}
		}
		// Scraped by the bench's main process, as Prometheus would scrape
		// it; the primary only watches its own event loop meanwhile.
		const delay = monitorEventLoopDelay({ resolution: 1 });
		delay.enable();
		const scraped = await new Promise(resolve => {
			process.once('message', resolve);
			process.send({ scrape: port });
		});
		delay.disable();
		results.exporter = { ...scraped, maxDelay: delay.max / 1e6 };
		exporter.kill();
	}
	for (const w of Object.values(cluster.workers)) w.kill();
	process.send(results);
}

function worker() {
	const client = require(lib);
	// prom-client's workers answer the primary once an AggregatorRegistry
	// exists in them (its example makes one at the top of the module).
	new client.AggregatorRegistry();
	const c = new client.Counter({ name: 'bench_requests_total', help: 'h', labelNames: ['route', 'code'] });
	for (let i = 0; i < SERIES; i++) c.inc({ route: `/route/${i}`, code: '200' });
	process.send('ready');
	setInterval(() => {}, 1 << 30);
}

async function run(which) {
	return new Promise((resolve, reject) => {
		const child = require('child_process').fork(__filename, [], { env: { ...process.env, BENCH_LIB: which, BENCH_ROLE: 'primary' } });
		child.on('message', async m => {
			if (m && m.scrape) {
				child.send(await timed(async () => {
					const t0 = performance.now();
					const n = await get(m.scrape);
					return [performance.now() - t0, n];
				}));
			} else {
				resolve(m);
			}
		});
		child.on('exit', code => code && reject(new Error(`${which} exited ${code}`)));
	});
}

async function main() {
	console.log(`${SERIES} series in each of ${WORKERS} workers, median of ${SCRAPES} scrapes`);
	const prom = await run('prom-client');
	row('prom-client AggregatorRegistry.clusterMetrics()', prom.cluster);
	const ours = await run('shmetrics');
	row('shmetrics AggregatorRegistry.clusterMetrics()', ours.cluster);
	row('shmetrics serve, HTTP GET /metrics (primary idle)', ours.exporter);
	console.log(`exporter vs prom-client: ${(prom.cluster.median / ours.exporter.median).toFixed(1)}x faster`);
}

if (cluster.isWorker) worker();
else if (process.env.BENCH_ROLE === 'primary') primary();
else main();
