'use strict';

// API fuzzing: random calls of the public API with random arguments
// (wrong types, NaN, infinities, huge and odd strings, missing and extra
// labels, objects where numbers go). Every call either works or throws an
// Error (a ShmetricsError, or prom-client's TypeError and RangeError);
// none crashes the process or leaves the store unreadable. Seeded:
// SHMETRICS_FUZZ_SEED replays a run, SHMETRICS_FUZZ_CALLS sets its length.

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const { tempDir } = require('./helpers');

const dir = tempDir('shmetrics-fuzz-');
const client = require('shmetrics');

const SEED = Number(process.env.SHMETRICS_FUZZ_SEED || Date.now() % 1e9);
const CALLS = Number(process.env.SHMETRICS_FUZZ_CALLS || 100000);

// mulberry32: a small seeded generator, so a failing run can be replayed.
function rng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

const rand = rng(SEED);
const pick = list => list[Math.floor(rand() * list.length)];
const NAMES = ['a', 'b', 'le', 'quantile', '0bad', 'with space', '', '__x'];
const STRINGS = ['', 'x', 'say "hi"', 'back\\slash', 'new\nline', '\u0000nul', 'grüße 世界', 'x'.repeat(5000), '\ud800'];

function value() {
	return pick([
		() => rand() * 100,
		() => -rand() * 100,
		() => 0,
		() => NaN,
		() => Infinity,
		() => -Infinity,
		() => pick(STRINGS),
		() => undefined,
		() => null,
		() => ({}),
		() => [1],
		() => 2 ** 60,
		() => Number.MIN_VALUE,
	])();
}

function labels(names) {
	const out = {};
	for (const n of names) if (rand() < 0.8) out[n] = rand() < 0.5 ? pick(STRINGS) : value();
	if (rand() < 0.1) out[pick(NAMES)] = 'extra';
	return out;
}

function construct(registry) {
	const Type = pick([client.Counter, client.Gauge, client.Histogram, client.Summary]);
	const labelNames = rand() < 0.7 ? ['a', 'b'].slice(0, 1 + Math.floor(rand() * 2)) : [pick(NAMES)];
	const config = {
		name: pick(['f_one', 'f_two', 'f_three', 'bad name', '', 'f:colon', `f_${Math.floor(rand() * 5)}`]),
		help: pick(['help', '', 'multi\nline', 7]),
		labelNames,
		registers: [registry],
	};
	if (rand() < 0.2) config.buckets = [pick([1, 0.5, NaN, -1, 'x']), 2, 5];
	if (rand() < 0.2) config.percentiles = [pick([0.5, 2, -1, NaN]), 0.9];
	if (rand() < 0.1) config.maxAgeSeconds = pick([1, 0, -5, NaN, 600]);
	if (rand() < 0.1) config.aggregator = pick(['sum', 'max', 'average', 'omit', 'nope']);
	return new Type(config);
}

function call(metric) {
	const names = metric.labelNames;
	const ops = {
		counter: [() => metric.inc(labels(names), value()), () => metric.inc(value()), () => metric.labels(...names.map(() => pick(STRINGS))).inc(value())],
		gauge: [() => metric.set(labels(names), value()), () => metric.inc(labels(names), value()), () => metric.dec(value()), () => metric.setToCurrentTime(labels(names))],
		histogram: [() => metric.observe(labels(names), value()), () => metric.zero(labels(names)), () => metric.labels(labels(names)).observe(value()), () => metric.startTimer(labels(names))()],
		summary: [() => metric.observe(labels(names), value()), () => metric.labels(labels(names)).observe(value())],
	}[metric.type];
	pick([...ops, () => metric.remove(labels(names)), () => metric.reset(), () => metric.get()])();
}

test(`API fuzzing (seed ${SEED}, ${CALLS} calls)`, async () => {
	client.useStore(path.join(dir, 'store'), { maxSeries: 512 });
	const registry = new client.Registry();
	const metrics = [];
	const thrown = new Map();
	for (let i = 0; i < CALLS; i++) {
		try {
			if (metrics.length === 0 || rand() < 0.02) metrics.push(construct(registry));
			else if (rand() < 0.01) registry.clear();
			else call(pick(metrics));
		} catch (err) {
			assert.ok(err instanceof Error, `seed ${SEED}, call ${i}: threw a non-Error ${String(err)}`);
			thrown.set(err.constructor.name, (thrown.get(err.constructor.name) || 0) + 1);
		}
	}
	for (const m of metrics) await m.get();
	const text = await registry.metrics();
	assert.strictEqual(typeof text, 'string');
	const whole = await new client.AggregatorRegistry().clusterMetrics();
	assert.ok(whole.length > 0);
	console.log(`seed ${SEED}: ${metrics.length} metrics; thrown: ${JSON.stringify(Object.fromEntries(thrown))}`);
});
