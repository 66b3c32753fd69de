'use strict';

// What every metric type shares: options as prom-client takes them, the
// family in the store, and the per-process cache of series handles.

const Registry = require('./registry');
const { isObject, getLabels, nowTimestamp } = require('./util');
const {
	validateMetricName,
	validateLabelName,
	validateLabel,
} = require('./validation');
const { native, wrap, ShmetricsError } = require('./errors');
const family = require('./family');
const stores = require('./store');
const collect = require('./collect');
const { forgetSeries } = require('../native');

// prom-client's aggregator names, as the store's gauge modes. Workers that
// died drop out of a gauge, as they drop out of prom-client's
// AggregatorRegistry. `omit` gauges stay out of the store (family.js).
const GAUGE_MODES = {
	sum: 'livesum',
	livesum: 'livesum',
	first: 'livemostrecent',
	min: 'livemin',
	max: 'livemax',
	average: 'liveaverage',
};

/**
 * Gives a child's series id back to the native half once the child is
 * garbage (its metric dropped, or its series removed), so that a process
 * that makes and drops metrics again and again does not grow.
 */
const released = new FinalizationRegistry(id => forgetSeries(id));

/** A series this process has written: its labels and its series id. */
class Child {
	constructor(labels, values, id) {
		this.labels = labels;
		this.values = values;
		this.id = id;
		/** What labels(...) returns for it, made on first use. */
		this.view = null;
	}
}

/** The children key of label values (as strings, in label-name order). */
function valuesKey(values) {
	let key = '';
	for (const v of values) key += `${v}\u0000`;
	return key;
}

class Metric {
	constructor(config, defaults = {}) {
		if (!isObject(config)) {
			throw new TypeError('constructor expected a config object');
		}
		Object.assign(
			this,
			{
				labelNames: [],
				registers: [Registry.globalRegistry],
				aggregator: 'sum',
				enableExemplars: false,
			},
			defaults,
			config,
		);
		if (!this.registers) this.registers = [Registry.globalRegistry];
		if (!this.help) throw new Error('Missing mandatory help parameter');
		if (!this.name) throw new Error('Missing mandatory name parameter');
		if (!validateMetricName(this.name)) throw new Error('Invalid metric name');
		if (!validateLabelName(this.labelNames)) {
			throw new Error('Invalid label name');
		}
		// Kept as strings: a number or an object given for either would
		// make every later page of the registry fail to render.
		this.name = String(this.name);
		this.help = String(this.help);
		if (this.collect && typeof this.collect !== 'function') {
			throw new Error('Optional "collect" parameter must be a function');
		}
		this.sortedLabelNames = [...this.labelNames].sort();
		this._family = null;
		this._forget();
	}

	/**
	 * Registers the family (`kind` and the type's own `spec` fields) and
	 * the metric in its registries; a metric without labels gets its one
	 * series at once, at zero.
	 */
	_attach(kind, spec = {}) {
		for (const register of this.registers) {
			if (
				this.enableExemplars &&
				register.contentType === Registry.PROMETHEUS_CONTENT_TYPE
			) {
				throw new TypeError(
					'Exemplars are supported only on OpenMetrics registries',
				);
			}
		}
		this._spec = {
			name: this.name,
			help: String(this.help),
			kind,
			labelNames: this.labelNames.map(String),
			exemplars: Boolean(this.enableExemplars),
			...spec,
		};
		if (kind === 'gauge') {
			this._spec.gaugeMode = GAUGE_MODES[this.aggregator] || 'livesum';
		}
		for (const register of this.registers) register.registerMetric(this);
		try {
			this._family = this._register(false);
			this._generation = stores.state.generation;
			if (this.labelNames.length === 0) this._child({});
			collect.schedule(this);
		} catch (err) {
			for (const register of this.registers) {
				if (register.getSingleMetric(this.name) === this) {
					register.removeSingleMetric(this.name);
				}
			}
			throw err;
		}
	}

	/** The family in the store (`again`: registering anew, see family.js). */
	_register(again) {
		return family.register(this._spec, { again, omit: this.aggregator === 'omit' });
	}

	/** The child for a label object, made (and its series) if new. */
	_child(labels) {
		validateLabel(this.labelNames, labels);
		const names = this.labelNames;
		let node = this._tree;
		for (let i = 0; i < names.length; i++) {
			const next = node.get(labels[names[i]]);
			if (next === undefined) return this._newChild(labels);
			node = next;
		}
		return node === null ? this._newChild(labels) : node;
	}

	/** The child for `labels(...args)`: an object, or values in order. */
	_childOf(args) {
		if (typeof args[0] === 'object') return this._child(args[0] || {});
		if (args.length !== this.labelNames.length) getLabels(this.labelNames, args); // throws
		let node = this._tree;
		for (let i = 0; i < args.length; i++) {
			const next = node.get(args[i]);
			if (next === undefined) return this._newChild(getLabels(this.labelNames, args));
			node = next;
		}
		return node === null ? this._newChild({}) : node;
	}

	/**
	 * Makes the child of `labels` and files it: in `_tree`, a Map per label
	 * name keyed by the values as given (the update path looks up strings
	 * it already has, with no key to build), and in `_byValues` by its
	 * values as strings (for reading the store back).
	 */
	_newChild(labels) {
		const values = this.labelNames.map(n =>
			labels[n] === undefined ? '' : String(labels[n]),
		);
		const key = valuesKey(values);
		let child = this._byValues.get(key);
		if (child === undefined) {
			const id = native(() => this._family.seriesId(values));
			child = new Child({ ...labels }, values, id);
			released.register(child, id);
			this._byValues.set(key, child);
		}
		this._file(labels, child);
		return child;
	}

	_file(labels, child) {
		const names = this.labelNames;
		let node = this._tree;
		for (let i = 0; i < names.length - 1; i++) {
			let next = node.get(labels[names[i]]);
			if (next === undefined) {
				next = new Map();
				node.set(labels[names[i]], next);
			}
			node = next;
		}
		if (names.length === 0) this._tree = child;
		else node.set(labels[names[names.length - 1]], child);
	}

	/** Forgets every child (their series are gone from the store). */
	_forget() {
		this._tree = this.labelNames.length === 0 ? null : new Map();
		this._byValues = new Map();
	}

	/**
	 * `op(id, v)`, one of the native update callbacks, on a child's series;
	 * a series made stale (removed, or the store wiped, by another
	 * process) is looked up again once.
	 */
	_write(child, op, v) {
		if (this._generation !== stores.state.generation) this._reattach();
		try {
			op(child.id, v);
		} catch (err) {
			this._retry(err, child, op, v);
		}
	}

	/**
	 * The store was opened again (lib/store.js): the family is registered
	 * in the new file and every child's id points at its series there.
	 */
	_reattach() {
		this._generation = stores.state.generation;
		this._family = native(() => this._register(true));
		for (const child of this._byValues.values()) {
			native(() => this._family.renew(child.id, child.values));
		}
	}

	_retry(err, child, op, v) {
		const e = wrap(err);
		if (!(e instanceof ShmetricsError) || e.code !== 'StaleHandle') throw e;
		try {
			this._family.renew(child.id, child.values);
		} catch (again) {
			if (wrap(again).code !== 'StaleHandle') throw wrap(again);
			this._family = native(() => this._register(true));
			native(() => this._family.renew(child.id, child.values));
		}
		native(() => op(child.id, v));
	}

	/** The labels of a call: an object, or values in label-name order. */
	_labels(args) {
		return getLabels(this.labelNames, args) || {};
	}

	/** Drops the series of `labels` from the store, in every process. */
	remove(...args) {
		const labels = this._labels(args);
		validateLabel(this.labelNames, labels);
		const values = this.labelNames.map(n =>
			labels[n] === undefined ? '' : String(labels[n]),
		);
		native(() => this._family.remove(values));
		const gone = this._byValues.get(valuesKey(values));
		if (gone) {
			const kept = [...this._byValues.values()].filter(c => c !== gone);
			this._forget();
			for (const c of kept) {
				this._byValues.set(valuesKey(c.values), c);
				this._file(c.labels, c);
			}
		}
	}

	/** Starts every series of the metric again from zero. */
	reset() {
		native(() => this._family.clear());
		this._forget();
		if (this.labelNames.length === 0) this._child({});
	}

	async _collect() {
		if (this.collect) {
			const v = this.collect();
			if (v instanceof Promise) await v;
		}
	}

	/**
	 * The family's series over all processes: [labels, series] pairs,
	 * labels as this process gave them where it wrote the series.
	 */
	_read() {
		if (this._generation !== stores.state.generation) this._reattach();
		const rows = native(() => this._family.read(true));
		return rows.map(row => [this._labelsOf(row), row]);
	}

	_labelsOf(row) {
		if (row.overflow) {
			return { shmetrics_overflow: 'true' };
		}
		const child = this._byValues.get(valuesKey(row.values));
		if (child) return { ...child.labels };
		const labels = {};
		this.labelNames.forEach((name, i) => {
			if (row.values[i] !== '') labels[name] = row.values[i];
		});
		return labels;
	}

	_result(values) {
		return {
			help: this.help,
			name: this.name,
			type: this.type,
			values,
			aggregator: this.aggregator,
		};
	}
}

/** prom-client's exemplar labels check (128 characters at most). */
function checkExemplarLabels(labelSet) {
	let chars = '';
	for (const [k, v] of Object.entries(labelSet)) chars += `${k}${v}`;
	if (chars.length > 128) {
		throw new RangeError('Label set size must be smaller than 128 UTF-8 chars');
	}
}

/** Exemplar labels as the flat list the native half takes. */
function flatLabels(labelSet) {
	const flat = [];
	for (const [k, v] of Object.entries(labelSet)) flat.push(k, String(v));
	return flat;
}

/** A stored exemplar as prom-client's Exemplar shape. */
function exemplarOf(e) {
	if (!e) return null;
	const labelSet = {};
	for (let i = 0; i + 1 < e.labels.length; i += 2) {
		labelSet[e.labels[i]] = e.labels[i + 1];
	}
	return { labelSet, value: e.value, timestamp: e.timestamp };
}

module.exports = {
	Metric,
	ops: require('../native'),
	checkExemplarLabels,
	flatLabels,
	exemplarOf,
	nowTimestamp,
};
