'use strict';

// prom-client runs a metric's collect() when a scrape asks the process for
// its page. Here scrapes go to `shmetrics serve`, which never asks a
// process, so collect() callbacks also run on one timer per process:
// every SHMETRICS_COLLECT_INTERVAL_MS milliseconds (default 10,000; 0
// turns it off). The timer is unref'd: it never keeps a process alive.

// The metrics made, held weakly: a metric the app dropped is garbage, and
// leaves the set when it is collected.
const metrics = new Set();
const dropped = new FinalizationRegistry(ref => metrics.delete(ref));
let timer = null;

function interval() {
	const v = Number(process.env.SHMETRICS_COLLECT_INTERVAL_MS);
	return Number.isFinite(v) && v >= 0 && process.env.SHMETRICS_COLLECT_INTERVAL_MS !== ''
		? v
		: 10000;
}

function runAll() {
	for (const ref of metrics) {
		const metric = ref.deref();
		if (!metric || !metric.collect) continue;
		metric._collect().catch(() => {
			// A failing collect() fails the in-process get() that runs it;
			// on the timer it keeps the last values.
		});
	}
}

/** Runs `metric`'s collect(), if it has or gets one, on the timer too. */
function schedule(metric) {
	const ref = new WeakRef(metric);
	metrics.add(ref);
	dropped.register(metric, ref);
	const ms = interval();
	if (timer === null && ms > 0) {
		timer = setInterval(runAll, ms);
		timer.unref();
	}
}

module.exports = { schedule };
