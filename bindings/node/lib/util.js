'use strict';

const { ShmetricsError } = require('./errors');

/** A sample value as the text format writes it. */
function getValueAsString(value) {
	if (Number.isNaN(value)) return 'Nan';
	if (value === Infinity) return '+Inf';
	if (value === -Infinity) return '-Inf';
	return `${value}`;
}

function isObject(obj) {
	return obj !== null && typeof obj === 'object';
}

/**
 * The labels a timer's end records: its start's and its end's, as
 * prom-client's `Object.assign({}, startLabels, endLabels)`. The start's
 * own object when the end adds none and it is a plain object (whose own
 * enumerable properties are what a copy would hold): the update path
 * only reads it, and skipping a copy per timed request cut the cost of a
 * request's calls with cold caches by about a tenth (docs/node.md, Speed).
 */
function timerLabels(labels, endLabels) {
	if (endLabels === undefined && isObject(labels) && Object.getPrototypeOf(labels) === Object.prototype) {
		return labels;
	}
	return Object.assign({}, labels, endLabels);
}

/**
 * The labels of a `labels(...)` or `remove(...)` call: one object, or one
 * value per label name in order.
 */
function getLabels(labelNames, args) {
	if (typeof args[0] === 'object') {
		return args[0];
	}
	if (labelNames.length !== args.length) {
		throw new ShmetricsError(
			`Invalid number of arguments (${args.length}): "${args.join(', ')}" ` +
				`for label names (${labelNames.length}): "${labelNames.join(', ')}".`,
			'LabelCount',
		);
	}
	const labels = {};
	labelNames.forEach((name, i) => {
		labels[name] = args[i];
	});
	return labels;
}

/** A key unique to a label set, the same for equal label objects. */
function hashObject(labels, labelNames) {
	const names = labelNames || Object.keys(labels).sort();
	let hash = '';
	for (const name of names) {
		const value = labels[name];
		if (value !== undefined) hash += `${name}:${value},`;
	}
	return hash;
}

function nowTimestamp() {
	return Date.now() / 1000;
}

/** A Map whose values are arrays. */
class Grouper extends Map {
	add(key, value) {
		const list = this.get(key);
		if (list) list.push(value);
		else this.set(key, [value]);
	}
}

module.exports = {
	getValueAsString,
	isObject,
	timerLabels,
	getLabels,
	hashObject,
	nowTimestamp,
	Grouper,
};
