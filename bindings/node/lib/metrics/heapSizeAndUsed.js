'use strict';

const Gauge = require('../gauge');
const { options, maker } = require('./common');

const TOTAL = 'nodejs_heap_size_total_bytes';
const USED = 'nodejs_heap_size_used_bytes';
const EXTERNAL = 'nodejs_external_memory_bytes';

module.exports = (registry, config) => {
	if (typeof process.memoryUsage !== 'function') return;
	const o = options(registry, config);
	const make = maker(Gauge, o);
	const total = make(TOTAL, 'Process heap size from Node.js in bytes.', {
		collect() {
			const m = process.memoryUsage();
			total.set(o.labels, m.heapTotal);
			used.set(o.labels, m.heapUsed);
			if (m.external !== undefined) external.set(o.labels, m.external);
		},
	});
	const used = make(USED, 'Process heap size used from Node.js in bytes.');
	const external = make(EXTERNAL, 'Node.js external memory size in bytes.');
};

module.exports.metricNames = [TOTAL, USED, EXTERNAL];
