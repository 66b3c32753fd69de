'use strict';

const util = require('util');
const { validateLabel } = require('./validation');
const { timerLabels } = require('./util');
const { Metric, ops } = require('./metric');

/** Observations with their sum, count and quantile estimates. */
class Summary extends Metric {
	constructor(config) {
		super(config, {
			percentiles: [0.01, 0.05, 0.5, 0.9, 0.95, 0.99, 0.999],
		});
		this.type = 'summary';
		for (const label of this.labelNames) {
			if (label === 'quantile') {
				throw new Error('quantile is a reserved label keyword');
			}
		}
		const spec = { percentiles: [...this.percentiles] };
		if (this.maxAgeSeconds) {
			spec.maxAgeSeconds = this.maxAgeSeconds;
			spec.ageBuckets = this.ageBuckets || 1;
		}
		this._attach('summary', spec);
	}

	/** observe(value) or observe(labels, value). */
	observe(labels, value) {
		let l = labels;
		let v = value;
		if (value === undefined) {
			l = {};
			v = labels;
		}
		const child = this._child(l || {});
		if (!Number.isFinite(v)) {
			throw new TypeError(`Value is not a valid number: ${util.format(v)}`);
		}
		this._write(child, ops.observe, v);
	}

	async get() {
		await this._collect();
		const values = [];
		for (const [labels, row] of this._read()) {
			const quantiles = row.quantiles || [];
			if (this.pruneAgedBuckets && quantiles.every(Number.isNaN) && row.count > 0) {
				continue;
			}
			this.percentiles.forEach((quantile, i) => {
				const q = quantiles[i];
				values.push({ labels: { quantile, ...labels }, value: q ? q : 0 });
			});
			values.push(
				{ metricName: `${this.name}_sum`, labels, value: row.value },
				{ metricName: `${this.name}_count`, labels, value: row.count },
			);
		}
		return this._result(values);
	}

	startTimer(labels) {
		const start = process.hrtime.bigint();
		return endLabels => {
			const value = Number(process.hrtime.bigint() - start) / 1e9;
			this.observe(timerLabels(labels, endLabels), value);
			return value;
		};
	}

	labels(...args) {
		const labels = this._labels(args);
		validateLabel(this.labelNames, labels);
		return {
			observe: value => this.observe(labels, value),
			startTimer: () => this.startTimer(labels),
		};
	}
}

module.exports = Summary;
