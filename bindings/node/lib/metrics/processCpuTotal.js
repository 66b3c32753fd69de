'use strict';

const Counter = require('../counter');
const { options, maker } = require('./common');

const USER = 'process_cpu_user_seconds_total';
const SYSTEM = 'process_cpu_system_seconds_total';
const TOTAL = 'process_cpu_seconds_total';

// Counters: each process adds the CPU time it used since it last
// collected, so the host's total keeps a dead worker's share.
module.exports = (registry, config) => {
	const o = options(registry, config);
	let last = process.cpuUsage();
	const make = maker(Counter, o);
	const user = make(USER, 'Total user CPU time spent in seconds.', {
		collect() {
			const now = process.cpuUsage();
			const u = (now.user - last.user) / 1e6;
			const s = (now.system - last.system) / 1e6;
			last = now;
			user.inc(o.labels, u);
			system.inc(o.labels, s);
			total.inc(o.labels, u + s);
		},
	});
	const system = make(SYSTEM, 'Total system CPU time spent in seconds.');
	const total = make(TOTAL, 'Total user and system CPU time spent in seconds.');
};

module.exports.metricNames = [USER, SYSTEM, TOTAL];
