'use strict';

// prom-client's AggregatorRegistry, without IPC: every worker writes to
// the shared store, so a primary's clusterMetrics() reads the host's sum
// from it (rendered by the core) instead of asking each worker for its
// registry and merging the answers on its event loop. Workers need no
// listener, a dead worker's counts stay counted, and a primary that
// exists only to serve metrics can be replaced by `shmetrics serve`.

const Registry = require('./registry');
const { Grouper } = require('./util');
const { aggregators } = require('./metricAggregators');
const { store } = require('./store');
const { native } = require('./errors');

class AggregatorRegistry extends Registry {
	constructor(regContentType = Registry.PROMETHEUS_CONTENT_TYPE) {
		super(regContentType);
	}

	/** The host's metrics, in this registry's content type. */
	async clusterMetrics() {
		const open = this.contentType === Registry.OPENMETRICS_CONTENT_TYPE;
		return native(() => store().render(open));
	}

	/** Merges `metricsArr`, arrays of `getMetricsAsJSON()` results. */
	static aggregate(metricsArr, registryType = Registry.PROMETHEUS_CONTENT_TYPE) {
		const registry = new Registry();
		registry.setContentType(registryType);
		const byName = new Grouper();
		for (const metrics of metricsArr) {
			for (const metric of metrics) byName.add(metric.name, metric);
		}
		for (const metrics of byName.values()) {
			const name = metrics[0].aggregator;
			const fn = aggregators[name];
			if (typeof fn !== 'function') {
				throw new Error(`'${name}' is not a defined aggregator.`);
			}
			const merged = fn(metrics);
			if (merged) registry.registerMetric({ get: () => merged, ...merged });
		}
		return registry;
	}

	/**
	 * prom-client's workers answered for these registries. Every registry's
	 * metrics are in the store already, so this only checks its argument.
	 */
	static setRegistries(regs) {
		for (const reg of Array.isArray(regs) ? regs : [regs]) {
			if (!(reg instanceof Registry)) {
				throw new TypeError(`Expected Registry, got ${typeof reg}`);
			}
		}
	}
}

module.exports = AggregatorRegistry;
