'use strict';

// Runs prom-client 15.1.3's own Jest suite (from ../shared/peers, or
// PROM_CLIENT_DIR) twice: against prom-client itself (its npm package),
// then against this package, each copied with the suite's tests into a
// directory under target/ where the tests' `require('../index')` and
// `require('../lib/...')` find it. Fails if fewer than FLOOR tests pass
// on shmetrics, or if a test that passes on prom-client fails on shmetrics
// without being listed, with its reason, in docs/node.md ("prom-client's
// own tests"). With --install, only installs what the Node tests use
// (Jest, nock, Express, PM2, TypeScript, prom-client) under
// target/node-suite.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync, spawnSync } = require('child_process');

const VERSION = '15.1.3';
// Measured 2026-11-29: raise it when more pass, never lower it to pass.
const FLOOR = 455;

const ROOT = path.resolve(__dirname, '../../..');
const PEER = process.env.PROM_CLIENT_DIR || path.join(ROOT, '..', 'shared', 'peers', `prom-client-v${VERSION}`);
const WORK = path.join(ROOT, 'target', 'node-suite');
const PKG = path.join(ROOT, 'bindings', 'node');
const DOCS = path.join(ROOT, 'docs', 'node.md');
const DEPS = ['jest@29.7.0', 'nock@13.5.6', 'express@4.21.2', 'pm2@5.4.3', 'typescript@5.6.3', `prom-client@${VERSION}`];

function install() {
	fs.mkdirSync(WORK, { recursive: true });
	const have = DEPS.every(d => fs.existsSync(path.join(WORK, 'node_modules', d.slice(0, d.lastIndexOf('@')))));
	if (!have) {
		fs.writeFileSync(path.join(WORK, 'package.json'), '{"name":"shmetrics-node-suite","private":true}\n');
		execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', ...DEPS], { cwd: WORK, stdio: 'inherit' });
	}
	installAlias();
}

/**
 * target/node-suite/alias: a project whose `prom-client` is this package
 * (npm's `file:` dependency, a link), with a library built on prom-client
 * (express-prom-bundle), for tests/library.test.js.
 */
function installAlias() {
	const dir = path.join(WORK, 'alias');
	if (fs.existsSync(path.join(dir, 'node_modules', 'express-prom-bundle'))) return;
	fs.mkdirSync(dir, { recursive: true });
	const pkg = {
		name: 'shmetrics-alias',
		private: true,
		dependencies: { express: '4.21.2', 'express-prom-bundle': '8.0.0', 'prom-client': `file:${PKG}` },
	};
	fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(pkg, null, '\t')}\n`);
	// --legacy-peer-deps: express-prom-bundle asks for prom-client >=15, and
	// this package is shmetrics 1.0 (docs/node.md, "Libraries built on
	// prom-client").
	execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', '--legacy-peer-deps'], { cwd: dir, stdio: 'inherit' });
}

/** A directory holding `files` of `from`, the suite's tests and a Jest config. */
function prepare(name, from, files, setup) {
	const dir = path.join(WORK, name);
	fs.rmSync(dir, { recursive: true, force: true });
	fs.mkdirSync(dir);
	for (const f of files) fs.cpSync(path.join(from, f), path.join(dir, f), { recursive: true });
	fs.cpSync(path.join(PEER, 'test'), path.join(dir, 'test'), { recursive: true });
	const config = { testEnvironment: 'node', testRegex: '.*Test\\.js$', rootDir: dir };
	if (setup) {
		fs.copyFileSync(path.join(__dirname, 'setup.js'), path.join(dir, 'setup.js'));
		config.setupFiles = ['<rootDir>/setup.js'];
	}
	fs.writeFileSync(path.join(dir, 'jest.config.json'), JSON.stringify(config));
	return dir;
}

/**
 * Test id -> status, from one Jest run in `dir`. The stores its test
 * files make (setup.js) are removed after it.
 */
function jest(dir) {
	const out = path.join(dir, 'results.json');
	const bin = path.join(WORK, 'node_modules', 'jest', 'bin', 'jest.js');
	const stores = fs.mkdtempSync(path.join(os.tmpdir(), 'shmetrics-jest-run-'));
	try {
		spawnSync(process.execPath, [bin, '--config', path.join(dir, 'jest.config.json'), '--json', `--outputFile=${out}`, '--silent'], {
			cwd: dir,
			stdio: ['ignore', 'ignore', fs.openSync(path.join(dir, 'jest.log'), 'w')],
			env: { ...process.env, NODE_PATH: path.join(WORK, 'node_modules'), SHMETRICS_JEST_STORES: stores },
		});
	} finally {
		fs.rmSync(stores, { recursive: true, force: true });
	}
	const results = JSON.parse(fs.readFileSync(out, 'utf8'));
	const status = new Map();
	for (const file of results.testResults) {
		const rel = path.relative(dir, file.name);
		for (const t of file.assertionResults) status.set(`${rel} › ${t.fullName}`, t.status);
		if (file.assertionResults.length === 0) status.set(`${rel} › (suite)`, 'failed');
	}
	return status;
}

/** The tests docs/node.md lists as failing, each `- \`id\`: reason`. */
function documented() {
	const text = fs.readFileSync(DOCS, 'utf8');
	const section = text.split("## prom-client's own tests")[1] || '';
	const body = section.split('\n## ')[0];
	const ids = new Set();
	for (const m of body.matchAll(/^- `([^`]+)`: \S/gm)) ids.add(m[1]);
	return ids;
}

function main() {
	install();
	if (process.argv.includes('--install')) return;
	const peerPkg = path.join(WORK, 'node_modules', 'prom-client');
	const theirs = jest(prepare('prom-client', peerPkg, ['index.js', 'lib'], false));
	const ours = jest(prepare('shmetrics', PKG, ['index.js', 'native.js', 'lib', 'shmetrics.linux-x64-gnu.node'], true));
	const baseline = [...theirs].filter(([, s]) => s === 'passed').map(([id]) => id);
	const passed = baseline.filter(id => ours.get(id) === 'passed');
	const failing = baseline.filter(id => ours.get(id) !== 'passed');
	const listed = documented();
	const unlisted = failing.filter(id => !listed.has(id));
	const stale = [...listed].filter(id => ours.get(id) === 'passed');
	console.log(`prom-client ${VERSION}'s own tests: ${passed.length} of the ${baseline.length} that pass on prom-client pass on shmetrics`);
	for (const id of unlisted) console.log(`  FAILS, not in docs/node.md: ${id}`);
	for (const id of stale) console.log(`  passes now, listed as failing in docs/node.md: ${id}`);
	if (passed.length < FLOOR || unlisted.length || stale.length) {
		console.log(`fewer than ${FLOOR} passed, or the list in docs/node.md is not current`);
		process.exit(1);
	}
}

main();
