'use strict';

const v8 = require('v8');
const Gauge = require('../gauge');
const { options } = require('./common');

const KINDS = ['total', 'used', 'available'];
const NAMES = KINDS.map(k => `nodejs_heap_space_size_${k}_bytes`);

module.exports = (registry, config) => {
	if (typeof v8.getHeapSpaceStatistics !== 'function') return;
	const o = options(registry, config);
	const gauges = KINDS.map(
		(kind, i) =>
			new Gauge({
				name: o.prefix + NAMES[i],
				help: `Process heap space size ${kind} from Node.js in bytes.`,
				labelNames: ['space', ...o.labelNames],
				registers: o.registers,
			}),
	);
	gauges[0].collect = () => {
		for (const s of v8.getHeapSpaceStatistics()) {
			const labels = { ...o.labels, space: s.space_name.slice(0, -'_space'.length) };
			gauges[0].set(labels, s.space_size);
			gauges[1].set(labels, s.space_used_size);
			gauges[2].set(labels, s.space_available_size);
		}
	};
};

module.exports.metricNames = NAMES;
