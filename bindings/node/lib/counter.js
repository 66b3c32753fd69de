'use strict';

const util = require('util');
const { isObject } = require('./util');
const { native } = require('./errors');
const {
	Metric,
	ops,
	checkExemplarLabels,
	flatLabels,
	exemplarOf,
} = require('./metric');

/** A count that only goes up. */
class Counter extends Metric {
	constructor(config) {
		super(config);
		this.type = 'counter';
		this.defaultLabels = {};
		this.defaultValue = 1;
		this.defaultExemplarLabelSet = {};
		this._attach('counter');
		this.inc = this.enableExemplars ? this.incWithExemplar : this.incWithoutExemplar;
	}

	/** inc(), inc(value), inc(labels), inc(labels, value). */
	incWithoutExemplar(labels, value) {
		let child;
		if (isObject(labels)) {
			child = this._child(labels);
		} else {
			value = labels;
			child = this._child({});
		}
		this._write(child, ops.inc, checkAmount(value));
	}

	/** inc({ labels, value, exemplarLabels }). */
	incWithExemplar({
		labels = this.defaultLabels,
		value = this.defaultValue,
		exemplarLabels = this.defaultExemplarLabelSet,
	} = {}) {
		const child = this._child(labels);
		const v = checkAmount(value);
		if (exemplarLabels === this.defaultExemplarLabelSet) {
			this._write(child, ops.inc, v);
			return;
		}
		checkExemplarLabels(exemplarLabels);
		const flat = flatLabels(exemplarLabels);
		native(() => this._family.incExemplar(child.values, v, flat));
	}

	async get() {
		await this._collect();
		const values = this._read().map(([labels, row]) => {
			const value = { value: row.value, labels };
			const e = exemplarOf(row.exemplars[0]);
			if (e) value.exemplar = e;
			return value;
		});
		return this._result(values);
	}

	labels(...args) {
		if (this.enableExemplars) {
			return { inc: this.inc.bind(this, this._labels(args)) };
		}
		const child = this._childOf(args);
		if (child.view === null) {
			child.view = { inc: value => this._write(child, ops.inc, checkAmount(value)) };
		}
		return child.view;
	}
}

function checkAmount(value) {
	if (value && !Number.isFinite(value)) {
		throw new TypeError(`Value is not a valid number: ${util.format(value)}`);
	}
	if (value < 0) {
		throw new Error('It is not possible to decrease a counter');
	}
	return value === null || value === undefined ? 1 : value;
}

module.exports = Counter;
