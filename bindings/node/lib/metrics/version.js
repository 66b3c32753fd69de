'use strict';

const Gauge = require('../gauge');
const { options } = require('./common');

const NAME = 'nodejs_version_info';
const [major, minor, patch] = process.version.slice(1).split('.').map(Number);

module.exports = (registry, config) => {
	const o = options(registry, config);
	const gauge = new Gauge({
		name: o.prefix + NAME,
		help: 'Node.js version info.',
		labelNames: ['version', 'major', 'minor', 'patch', ...o.labelNames],
		registers: o.registers,
		aggregator: 'first',
		collect() {
			this.set({ version: process.version, major, minor, patch, ...o.labels }, 1);
		},
	});
	gauge.set({ version: process.version, major, minor, patch, ...o.labels }, 1);
};

module.exports.metricNames = [NAME];
