'use strict';

// prom-client's default metrics, under the same names. Each process writes
// its own into the store: counters (CPU seconds) add up over every process
// that ever ran, gauges by their aggregator over the live ones. With no
// scrape reaching the workers, the collect() callbacks run on a timer
// (lib/collect.js) as well as on every in-process get().

const { isObject } = require('./util');

const metrics = {
	processCpuTotal: require('./metrics/processCpuTotal'),
	processStartTime: require('./metrics/processStartTime'),
	osMemoryHeap: require('./metrics/osMemoryHeap'),
	processOpenFileDescriptors: require('./metrics/processOpenFileDescriptors'),
	processMaxFileDescriptors: require('./metrics/processMaxFileDescriptors'),
	eventLoopLag: require('./metrics/eventLoopLag'),
	...(typeof process.getActiveResourcesInfo === 'function'
		? { processResources: require('./metrics/processResources') }
		: {}),
	processHandles: require('./metrics/processHandles'),
	processRequests: require('./metrics/processRequests'),
	heapSizeAndUsed: require('./metrics/heapSizeAndUsed'),
	heapSpacesSizeAndUsed: require('./metrics/heapSpacesSizeAndUsed'),
	version: require('./metrics/version'),
	gc: require('./metrics/gc'),
};

function collectDefaultMetrics(config) {
	if (config !== null && config !== undefined && !isObject(config)) {
		throw new TypeError('config must be null, undefined, or an object');
	}
	const c = { eventLoopMonitoringPrecision: 10, ...config };
	for (const metric of Object.values(metrics)) metric(c.register, c);
}

module.exports = collectDefaultMetrics;
module.exports.metricsList = Object.keys(metrics);
