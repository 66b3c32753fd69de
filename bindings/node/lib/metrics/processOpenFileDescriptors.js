'use strict';

const fs = require('fs');
const Gauge = require('../gauge');
const { options } = require('./common');

const NAME = 'process_open_fds';

module.exports = (registry, config) => {
	if (process.platform !== 'linux') return;
	const o = options(registry, config);
	new Gauge({
		name: o.prefix + NAME,
		help: 'Number of open file descriptors.',
		registers: o.registers,
		labelNames: o.labelNames,
		collect() {
			try {
				// One entry is the directory handle readdir itself opened.
				this.set(o.labels, fs.readdirSync('/proc/self/fd').length - 1);
			} catch {
				// /proc unreadable: keep the last value.
			}
		},
	});
};

module.exports.metricNames = [NAME];
