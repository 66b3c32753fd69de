'use strict';

// prom-client runs a metric's collect() when a scrape asks the process for
// its page. Here scrapes go to `shmetrics serve`, which never asks a
// process, so collect() callbacks also run on one timer per process:
// every SHMETRICS_COLLECT_INTERVAL_MS milliseconds (default 10,000; 0
// turns it off). The timer is unref'd: it never keeps a process alive.

const metrics = new Set();
let timer = null;

function interval() {
	const v = Number(process.env.SHMETRICS_COLLECT_INTERVAL_MS);
	return Number.isFinite(v) && v >= 0 && process.env.SHMETRICS_COLLECT_INTERVAL_MS !== ''
		? v
		: 10000;
}

function runAll() {
	for (const metric of metrics) {
		if (!metric.collect) continue;
		metric._collect().catch(() => {
			// A failing collect() fails the in-process get() that runs it;
			// on the timer it keeps the last values.
		});
	}
}

/** Runs `metric`'s collect(), if it has or gets one, on the timer too. */
function schedule(metric) {
	metrics.add(metric);
	const ms = interval();
	if (timer === null && ms > 0) {
		timer = setInterval(runAll, ms);
		timer.unref();
	}
}

module.exports = { schedule };
