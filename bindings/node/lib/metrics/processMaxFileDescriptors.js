'use strict';

const fs = require('fs');
const Gauge = require('../gauge');
const { options } = require('./common');

const NAME = 'process_max_fds';

function maxFds() {
	const limits = fs.readFileSync('/proc/self/limits', 'utf8');
	const m = /^Max open files\s+(\d+)/m.exec(limits);
	return m ? Number(m[1]) : undefined;
}

module.exports = (registry, config) => {
	if (process.platform !== 'linux') return;
	const o = options(registry, config);
	let max;
	try {
		max = maxFds();
	} catch {
		return;
	}
	if (max === undefined) return;
	const gauge = new Gauge({
		name: o.prefix + NAME,
		help: 'Maximum number of open file descriptors.',
		registers: o.registers,
		labelNames: o.labelNames,
		collect() {
			this.set(o.labels, max);
		},
	});
	gauge.set(o.labels, max);
};

module.exports.metricNames = [NAME];
