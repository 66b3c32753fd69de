'use strict';

const Gauge = require('../gauge');
const { options } = require('./common');

/**
 * A gauge by `type` and its total, from `list()` (objects, or the names of
 * resource types): nodejs_active_handles, _requests and _resources.
 */
function groupedGauges(registry, config, spec) {
	const o = options(registry, config);
	const byType = new Gauge({
		name: o.prefix + spec.name,
		help: spec.help,
		labelNames: ['type', ...o.labelNames],
		registers: o.registers,
		collect() {
			const counts = {};
			for (const item of spec.list()) {
				const type = typeof item === 'string' ? item : item.constructor.name;
				counts[type] = (counts[type] || 0) + 1;
			}
			this.reset();
			for (const [type, n] of Object.entries(counts)) {
				this.set({ ...o.labels, type }, n);
			}
		},
	});
	const total = new Gauge({
		name: o.prefix + spec.totalName,
		help: spec.totalHelp,
		registers: o.registers,
		labelNames: o.labelNames,
		collect() {
			this.set(o.labels, spec.list().length);
		},
	});
	return [byType, total];
}

module.exports = { groupedGauges };
