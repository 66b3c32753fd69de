'use strict';

const Gauge = require('../gauge');
const { options } = require('./common');

const NAME = 'process_start_time_seconds';
const started = Math.round(Date.now() / 1000 - process.uptime());

module.exports = (registry, config) => {
	const o = options(registry, config);
	const gauge = new Gauge({
		name: o.prefix + NAME,
		help: 'Start time of the process since unix epoch in seconds.',
		registers: o.registers,
		labelNames: o.labelNames,
		aggregator: 'omit',
		collect() {
			this.set(o.labels, started);
		},
	});
	gauge.set(o.labels, started);
};

module.exports.metricNames = [NAME];
