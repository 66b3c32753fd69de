'use strict';

const util = require('util');
const { isObject, timerLabels } = require('./util');
const { validateLabel } = require('./validation');
const { native } = require('./errors');
const {
	Metric,
	ops,
	checkExemplarLabels,
	flatLabels,
	exemplarOf,
} = require('./metric');

/** Observations counted in buckets, with their sum and count. */
class Histogram extends Metric {
	constructor(config) {
		super(config, {
			buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
		});
		this.type = 'histogram';
		this.defaultLabels = {};
		this.defaultExemplarLabelSet = {};
		for (const label of this.labelNames) {
			if (label === 'le') throw new Error('le is a reserved label keyword');
		}
		this.upperBounds = Object.freeze([...this.buckets]);
		this._attach('histogram', { buckets: [...this.upperBounds] });
		this.observe = this.enableExemplars
			? this.observeWithExemplar
			: this.observeWithoutExemplar;
	}

	/** observe(value) or observe(labels, value). */
	observeWithoutExemplar(labels, value) {
		const [l, v] = args(labels, value);
		this._observe(this._child(l), v, null);
	}

	/** observe({ labels, value, exemplarLabels }). */
	observeWithExemplar({
		labels = this.defaultLabels,
		value,
		exemplarLabels = this.defaultExemplarLabelSet,
	} = {}) {
		const hasExemplar = Object.keys(exemplarLabels).length > 0;
		if (hasExemplar) checkExemplarLabels(exemplarLabels);
		this._observe(this._child(labels), value, hasExemplar ? flatLabels(exemplarLabels) : null);
	}

	_observe(child, value, exemplar) {
		if (!Number.isFinite(value)) {
			throw new TypeError(`Value is not a valid number: ${util.format(value)}`);
		}
		if (exemplar === null) this._write(child, ops.observe, value);
		else native(() => this._family.observeExemplar(child.values, value, exemplar));
	}

	/** prom-client's shape: a bucket's labels are `le` and the series'. */
	async get() {
		const data = await this.getForPromString();
		data.values = data.values.map(({ sharedLabels, labels, ...rest }) => ({
			...rest,
			labels: Object.assign(labels, sharedLabels),
		}));
		return data;
	}

	/**
	 * As get(), with each sample's series labels apart (`sharedLabels`),
	 * which the registry writes after `le`, as prom-client does.
	 */
	async getForPromString() {
		await this._collect();
		const bucket = `${this.name}_bucket`;
		const values = [];
		for (const [labels, row] of this._read()) {
			const counts = row.buckets || [];
			this.upperBounds.forEach((le, i) => {
				values.push(pair({ le }, counts[i], bucket, exemplarAt(row, i), labels));
			});
			const inf = this.upperBounds.length;
			values.push(
				pair({ le: '+Inf' }, row.count, bucket, exemplarAt(row, inf), labels),
				pair({}, row.value, `${this.name}_sum`, undefined, labels),
				pair({}, row.count, `${this.name}_count`, undefined, labels),
			);
		}
		return this._result(values);
	}

	/** Drops every series, as prom-client's reset() leaves none. */
	reset() {
		native(() => this._family.clear());
		this._forget();
	}

	/** Starts the series of `labels` again from zero. */
	zero(labels) {
		const child = this._child(labels || {});
		this.remove(labels || {});
		this._child(child.labels);
	}

	startTimer(labels, exemplarLabels) {
		const start = process.hrtime.bigint();
		return (endLabels, endExemplarLabels) => {
			const value = Number(process.hrtime.bigint() - start) / 1e9;
			const all = timerLabels(labels, endLabels);
			if (this.enableExemplars) {
				this.observe({
					labels: all,
					value,
					exemplarLabels: Object.assign({}, exemplarLabels, endExemplarLabels),
				});
			} else {
				this.observe(all, value);
			}
			return value;
		};
	}

	labels(...args) {
		if (this.enableExemplars) {
			const labels = this._labels(args);
			validateLabel(this.labelNames, labels);
			return {
				observe: value => this.observe(labels, value),
				startTimer: () => this.startTimer(labels),
			};
		}
		const child = this._childOf(args);
		if (child.view === null) {
			child.view = {
				observe: value => this._observe(child, value, null),
				startTimer: () => this.startTimer(child.labels),
			};
		}
		return child.view;
	}
}

function pair(labels, value, metricName, exemplar, sharedLabels) {
	return { labels, sharedLabels, value, metricName, exemplar };
}

function exemplarAt(row, place) {
	return row.exemplars.length ? exemplarOf(row.exemplars[place]) : null;
}

function args(labels, value) {
	if (labels === 0) return [{}, 0];
	return isObject(labels) ? [labels, value] : [{}, labels];
}

module.exports = Histogram;
