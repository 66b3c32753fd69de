'use strict';

const { PerformanceObserver, constants } = require('perf_hooks');
const Histogram = require('../histogram');
const { options } = require('./common');

const NAME = 'nodejs_gc_duration_seconds';
const BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5];

const KINDS = {
	[constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
	[constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
	[constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
	[constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

// Observed as each collection ends, not at a scrape.
module.exports = (registry, config = {}) => {
	const o = options(registry, config);
	const histogram = new Histogram({
		name: o.prefix + NAME,
		help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
		labelNames: ['kind', ...o.labelNames],
		buckets: config.gcDurationBuckets ? config.gcDurationBuckets : BUCKETS,
		registers: o.registers,
	});
	const observer = new PerformanceObserver(list => {
		for (const entry of list.getEntries()) {
			const kind = KINDS[entry.detail ? entry.detail.kind : entry.kind];
			histogram.observe({ ...o.labels, kind }, entry.duration / 1000);
		}
	});
	observer.observe({ entryTypes: ['gc'] });
};

module.exports.metricNames = [NAME];
