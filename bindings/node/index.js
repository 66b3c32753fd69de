'use strict';

// shmetrics: prom-client's API, with every worker's metrics in one
// shared-memory store per host. `require('prom-client')` becomes
// `require('shmetrics')`; `shmetrics serve` serves the host's sum.

const Registry = require('./lib/registry');

exports.register = Registry.globalRegistry;
exports.Registry = Registry;
Object.defineProperty(exports, 'contentType', {
	configurable: false,
	enumerable: true,
	get() {
		return exports.register.contentType;
	},
	set(value) {
		exports.register.setContentType(value);
	},
});
exports.prometheusContentType = Registry.PROMETHEUS_CONTENT_TYPE;
exports.openMetricsContentType = Registry.OPENMETRICS_CONTENT_TYPE;
exports.validateMetricName = require('./lib/validation').validateMetricName;

exports.Counter = require('./lib/counter');
exports.Gauge = require('./lib/gauge');
exports.Histogram = require('./lib/histogram');
exports.Summary = require('./lib/summary');
exports.Pushgateway = require('./lib/pushgateway');

exports.linearBuckets = require('./lib/bucketGenerators').linearBuckets;
exports.exponentialBuckets = require('./lib/bucketGenerators').exponentialBuckets;

exports.collectDefaultMetrics = require('./lib/defaultMetrics');

exports.aggregators = require('./lib/metricAggregators').aggregators;
exports.AggregatorRegistry = require('./lib/cluster');

// shmetrics' own.
exports.ShmetricsError = require('./lib/errors').ShmetricsError;
exports.useStore = require('./lib/store').useStore;
