'use strict';

const { groupedGauges } = require('./grouped');

const NAME = 'nodejs_active_requests';
const TOTAL = 'nodejs_active_requests_total';

module.exports = (registry, config) => {
	if (typeof process._getActiveRequests !== 'function') return;
	groupedGauges(registry, config, {
		name: NAME,
		help: 'Number of active libuv requests grouped by request type. Every request type is C++ class name.',
		totalName: TOTAL,
		totalHelp: 'Total number of active requests.',
		list: () => process._getActiveRequests(),
	});
};

module.exports.metricNames = [NAME, TOTAL];
