'use strict';

const { groupedGauges } = require('./grouped');

const NAME = 'nodejs_active_handles';
const TOTAL = 'nodejs_active_handles_total';

module.exports = (registry, config) => {
	if (typeof process._getActiveHandles !== 'function') return;
	groupedGauges(registry, config, {
		name: NAME,
		help: 'Number of active libuv handles grouped by handle type. Every handle type is C++ class name.',
		totalName: TOTAL,
		totalHelp: 'Total number of active handles.',
		list: () => process._getActiveHandles(),
	});
};

module.exports.metricNames = [NAME, TOTAL];
