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

module.exports = { options };
