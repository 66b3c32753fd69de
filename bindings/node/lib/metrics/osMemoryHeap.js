'use strict';

const fs = require('fs');
const Gauge = require('../gauge');
const { options, maker } = require('./common');

const RESIDENT = 'process_resident_memory_bytes';
const VIRTUAL = 'process_virtual_memory_bytes';
const HEAP = 'process_heap_bytes';

// VmRSS, VmSize and VmData of /proc/self/status, in kB.
function procStatus() {
	const text = fs.readFileSync('/proc/self/status', 'utf8');
	const kb = key => {
		const m = new RegExp(`^${key}:\\s*(\\d+)`, 'm').exec(text);
		return m ? Number(m[1]) * 1024 : undefined;
	};
	return { rss: kb('VmRSS'), virtual: kb('VmSize'), heap: kb('VmData') };
}

module.exports = (registry, config) => {
	const o = options(registry, config);
	const make = maker(Gauge, o);
	const linux = process.platform === 'linux';
	const resident = make(RESIDENT, 'Resident memory size in bytes.', {
		collect() {
			if (!linux) {
				resident.set(o.labels, process.memoryUsage().rss);
				return;
			}
			let s;
			try {
				s = procStatus();
			} catch {
				return;
			}
			if (s.rss !== undefined) resident.set(o.labels, s.rss);
			if (s.virtual !== undefined) virtual.set(o.labels, s.virtual);
			if (s.heap !== undefined) heap.set(o.labels, s.heap);
		},
	});
	const virtual = linux && make(VIRTUAL, 'Virtual memory size in bytes.');
	const heap = linux && make(HEAP, 'Process heap size in bytes.');
};

module.exports.metricNames = [RESIDENT, VIRTUAL, HEAP];
