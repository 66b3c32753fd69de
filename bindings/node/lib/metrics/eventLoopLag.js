'use strict';

const { monitorEventLoopDelay } = require('perf_hooks');
const Gauge = require('../gauge');
const { options, maker } = require('./common');

const LAG = 'nodejs_eventloop_lag_seconds';
const STATS = [
	['min', 'The minimum recorded event loop delay.', 'min', h => h.min],
	['max', 'The maximum recorded event loop delay.', 'max', h => h.max],
	['mean', 'The mean of the recorded event loop delays.', 'average', h => h.mean],
	['stddev', 'The standard deviation of the recorded event loop delays.', 'average', h => h.stddev],
	['p50', 'The 50th percentile of the recorded event loop delays.', 'average', h => h.percentile(50)],
	['p90', 'The 90th percentile of the recorded event loop delays.', 'average', h => h.percentile(90)],
	['p99', 'The 99th percentile of the recorded event loop delays.', 'average', h => h.percentile(99)],
];

module.exports = (registry, config = {}) => {
	const o = options(registry, config);
	const histogram = monitorEventLoopDelay({
		resolution: config.eventLoopMonitoringPrecision,
	});
	histogram.enable();
	const make = maker(Gauge, o);
	const lag = make(LAG, 'Lag of event loop in seconds.', { aggregator: 'average' });
	const stats = STATS.map(([key, help, aggregator, read]) => [
		make(`nodejs_eventloop_lag_${key}_seconds`, help, { aggregator }),
		read,
	]);
	lag.collect = () => {
		const start = process.hrtime.bigint();
		setImmediate(() => {
			lag.set(o.labels, Number(process.hrtime.bigint() - start) / 1e9);
		});
		// Before its first sample the monitor's mean and deviation are NaN,
		// which a gauge refuses (merged over processes, NaN would stick).
		for (const [gauge, read] of stats) {
			const v = read(histogram) / 1e9;
			if (Number.isFinite(v)) gauge.set(o.labels, v);
		}
		histogram.reset();
	};
};

module.exports.metricNames = [LAG, ...STATS.map(([key]) => `nodejs_eventloop_lag_${key}_seconds`)];
