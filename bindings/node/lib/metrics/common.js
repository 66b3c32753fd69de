'use strict';

/** What every default metric takes from collectDefaultMetrics' config. */
function options(registry, config = {}) {
	const labels = config.labels ? config.labels : {};
	return {
		registers: registry ? [registry] : undefined,
		prefix: config.prefix ? config.prefix : '',
		labels,
		labelNames: Object.keys(labels),
	};
}

/**
 * A function making metrics of `Type` with the registers, prefix and label
 * names of `o` (from options()): make(name, help, { collect, ... }).
 */
function maker(Type, o) {
	return (name, help, extra = {}) =>
		new Type({
			name: o.prefix + name,
			help,
			registers: o.registers,
			labelNames: o.labelNames,
			...extra,
		});
}

module.exports = { options, maker };
