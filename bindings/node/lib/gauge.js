'use strict';

const util = require('util');
const { isObject, timerLabels } = require('./util');
const { Metric, ops } = require('./metric');
const { validateLabel } = require('./validation');

/** A value that goes up and down; across workers, by `aggregator`. */
class Gauge extends Metric {
	constructor(config) {
		super(config);
		this.type = 'gauge';
		this._attach('gauge');
	}

	set(labels, value) {
		const [l, v] = args(labels, value);
		if (typeof v !== 'number') {
			throw new TypeError(`Value is not a valid number: ${util.format(v)}`);
		}
		this._write(this._child(l), ops.set, v);
	}

	inc(labels, value) {
		const [l, v] = args(labels, value);
		this._add(l, v === undefined ? 1 : v);
	}

	dec(labels, value) {
		const [l, v] = args(labels, value);
		this._add(l, v === undefined ? -1 : -v);
	}

	_add(labels, delta) {
		if (typeof delta !== 'number') {
			throw new TypeError(`Delta is not a valid number: ${util.format(delta)}`);
		}
		this._write(this._child(labels), ops.add, delta);
	}

	setToCurrentTime(labels) {
		const now = Date.now() / 1000;
		if (labels === undefined) this.set(now);
		else this.set(labels, now);
	}

	startTimer(labels) {
		const start = process.hrtime.bigint();
		return endLabels => {
			const value = Number(process.hrtime.bigint() - start) / 1e9;
			this.set(timerLabels(labels, endLabels), value);
			return value;
		};
	}

	async get() {
		await this._collect();
		return this._result(
			this._read().map(([labels, row]) => ({ value: row.value, labels })),
		);
	}

	/** The value of one label set over all processes (0 if none). */
	_getValue(labels) {
		const child = this._child(labels || {});
		const row = this._read().find(([, r]) => sameValues(r.values, child.values));
		return row ? row[1].value : 0;
	}

	labels(...args) {
		const labels = this._labels(args);
		validateLabel(this.labelNames, labels);
		return {
			inc: this.inc.bind(this, labels),
			dec: this.dec.bind(this, labels),
			set: this.set.bind(this, labels),
			setToCurrentTime: this.setToCurrentTime.bind(this, labels),
			startTimer: this.startTimer.bind(this, labels),
		};
	}
}

function args(labels, value) {
	return isObject(labels) ? [labels, value] : [{}, labels];
}

function sameValues(a, b) {
	return a.length === b.length && a.every((v, i) => v === b[i]);
}

module.exports = Gauge;
