'use strict';

// prom-client's aggregators, for `AggregatorRegistry.aggregate()` on
// metrics gathered some other way. Workers never need them: the store adds
// up what they write.

const { Grouper, hashObject } = require('./util');

/** An aggregator of one metric from many registries, by `fn(values)`. */
function AggregatorFactory(fn) {
	return metrics => {
		if (metrics.length === 0) return undefined;
		const first = metrics[0];
		const result = {
			help: first.help,
			name: first.name,
			type: first.type,
			values: [],
			aggregator: first.aggregator,
		};
		const groups = new Grouper();
		for (const metric of metrics) {
			for (const value of metric.values) {
				groups.add(`${value.metricName}_${hashObject(value.labels)}`, value);
			}
		}
		for (const values of groups.values()) {
			const out = { value: fn(values), labels: values[0].labels };
			if (values[0].metricName) out.metricName = values[0].metricName;
			result.values.push(out);
		}
		return result;
	};
}

const aggregators = {
	sum: AggregatorFactory(v => v.reduce((acc, x) => acc + x.value, 0)),
	first: AggregatorFactory(v => v[0].value),
	omit: () => undefined,
	average: AggregatorFactory(v => v.reduce((acc, x) => acc + x.value, 0) / v.length),
	min: AggregatorFactory(v => v.reduce((acc, x) => Math.min(acc, x.value), Infinity)),
	max: AggregatorFactory(v => v.reduce((acc, x) => Math.max(acc, x.value), -Infinity)),
};

module.exports = { AggregatorFactory, aggregators };
