'use strict';

const { groupedGauges } = require('./grouped');

const NAME = 'nodejs_active_resources';
const TOTAL = 'nodejs_active_resources_total';

module.exports = (registry, config) => {
	if (typeof process.getActiveResourcesInfo !== 'function') return;
	groupedGauges(registry, config, {
		name: NAME,
		help: 'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
		totalName: TOTAL,
		totalHelp: 'Total number of active resources.',
		list: () => process.getActiveResourcesInfo(),
	});
};

module.exports.metricNames = [NAME, TOTAL];
