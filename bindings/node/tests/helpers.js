'use strict';

// What the server tests share: ports, HTTP, the exporter, a bounded load,
// and reading samples off a page.

const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const ROOT = path.resolve(__dirname, '../../..');

/** A new folder in the temporary one, removed when this process exits. */
function tempDir(prefix) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
	process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
	return dir;
}

function shmetricsBin() {
	return process.env.SHMETRICS_BIN || path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target'), 'debug', 'shmetrics');
}

async function freePorts(n) {
	const servers = [];
	for (let i = 0; i < n; i++) {
		const s = net.createServer();
		await new Promise(r => s.listen(0, '127.0.0.1', r));
		servers.push(s);
	}
	const ports = servers.map(s => s.address().port);
	await Promise.all(servers.map(s => new Promise(r => s.close(r))));
	return ports;
}

function get(port, urlPath, timeoutMs = 10000) {
	return new Promise((resolve, reject) => {
		const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false, timeout: timeoutMs }, res => {
			let body = '';
			res.setEncoding('utf8');
			res.on('data', c => (body += c));
			res.on('end', () => resolve({ status: res.statusCode, body }));
			res.on('error', reject);
		});
		req.on('timeout', () => req.destroy(new Error('timed out')));
		req.on('error', reject);
	});
}

async function waitUp(port, urlPath, proc) {
	const deadline = Date.now() + 60000;
	let stderr = '';
	if (proc.stderr) proc.stderr.on('data', d => (stderr += d));
	while (Date.now() < deadline) {
		if (proc.exitCode !== null) throw new Error(`exited with ${proc.exitCode}: ${stderr}`);
		try {
			await get(port, urlPath, 2000);
			return;
		} catch {
			await new Promise(r => setTimeout(r, 100));
		}
	}
	throw new Error(`nothing answered on port ${port}: ${stderr}`);
}

function serve(store, port) {
	return spawn(shmetricsBin(), ['serve', '--store', store, '--web.listen-address', `127.0.0.1:${port}`], {
		stdio: ['ignore', 'ignore', 'pipe'],
	});
}

async function stop(proc) {
	if (proc.exitCode !== null || proc.signalCode !== null) return;
	const exited = new Promise(r => proc.once('exit', r));
	proc.kill('SIGTERM');
	const timer = setTimeout(() => proc.kill('SIGKILL'), 20000);
	await exited;
	clearTimeout(timer);
}

/**
 * `total` GETs over `routes`, `concurrency` at a time; `each(done)` runs
 * after every response. Counts successes (200) and failures.
 */
async function load(port, routes, total, concurrency, each = async () => {}) {
	let next = 0;
	const sent = { ok: 0, failed: 0 };
	async function lane() {
		while (next < total) {
			const i = next++;
			try {
				const r = await get(port, routes[i % routes.length]);
				if (r.status === 200) sent.ok++;
				else sent.failed++;
			} catch {
				sent.failed++;
			}
			await each(sent.ok + sent.failed);
		}
	}
	await Promise.all(Array.from({ length: concurrency }, lane));
	return sent;
}

/**
 * Starts app/`file` (env on top of this process's, and PORT) and the
 * exporter on `store`, each stopped when the test `t` ends; waits for both.
 */
async function startApp(t, file, store, env = {}) {
	const [port, exporterPort] = await freePorts(2);
	const app = spawn(process.execPath, [path.join(__dirname, 'app', file)], {
		env: { ...process.env, SHMETRICS_STORE: store, PORT: String(port), ...env },
		stdio: ['ignore', 'ignore', 'pipe'],
	});
	t.after(() => stop(app));
	await waitUp(port, '/', app);
	const exporter = serve(store, exporterPort);
	t.after(() => stop(exporter));
	await waitUp(exporterPort, '/metrics', exporter);
	return { port, exporterPort };
}

/**
 * `total` requests over `routes` (8 at a time), with the worker that
 * answers GET /pid killed with SIGKILL once `at` responses are in.
 */
async function loadWithKill(port, routes, total, at) {
	let killed = false;
	const sent = await load(port, routes, total, 8, async done => {
		if (!killed && done >= at) {
			killed = true;
			process.kill(Number((await get(port, '/pid')).body), 'SIGKILL');
		}
	});
	if (!killed) throw new Error('no worker was killed');
	return sent;
}

/** The sum of a name's samples whose labels include `want`. */
function sum(page, name, want) {
	let total = 0;
	for (const line of page.split('\n')) {
		const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
		if (!m || m[1] !== name) continue;
		const labels = {};
		for (const l of (m[3] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
		if (Object.entries(want).every(([k, v]) => labels[k] === v)) total += Number(m[4]);
	}
	return total;
}

/**
 * app/express.js's requests (code 200) and duration observations on
 * `routes`, on a page (the tests' own GET /pid is counted too, on its route).
 */
function appCounts(page, routes) {
	return {
		requests: routes.reduce((n, route) => n + sum(page, 'http_requests_total', { route, code: '200' }), 0),
		observed: routes.reduce((n, route) => n + sum(page, 'http_request_duration_seconds_count', { route }), 0),
	};
}

/**
 * The /metrics page at `port`, read again (for up to 3 s) until
 * `enough(page)`: a response reaches the client before the app's 'finish'
 * handler counts it, so the last requests' counts may come a moment later.
 */
async function pageWhen(port, enough) {
	const deadline = Date.now() + 3000;
	for (;;) {
		const page = (await get(port, '/metrics')).body;
		if (enough(page) || Date.now() > deadline) return page;
		await new Promise(r => setTimeout(r, 50));
	}
}

module.exports = { tempDir, freePorts, get, waitUp, serve, stop, load, loadWithKill, startApp, sum, appCounts, pageWhen, shmetricsBin };
