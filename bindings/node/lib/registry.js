'use strict';

// A registry lists metrics for an in-process page (`metrics()`), as
// prom-client's does. The metrics' values live in the shared store, so a
// page made in any process shows the host's sum; `shmetrics serve` serves
// the same without any process rendering.

const { getValueAsString } = require('./util');

const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const OPENMETRICS_CONTENT_TYPE =
	'application/openmetrics-text; version=1.0.0; charset=utf-8';

function checkContentType(type, Err) {
	if (type !== PROMETHEUS_CONTENT_TYPE && type !== OPENMETRICS_CONTENT_TYPE) {
		throw new Err(`Content type ${type} is unsupported`);
	}
}

class Registry {
	static get PROMETHEUS_CONTENT_TYPE() {
		return PROMETHEUS_CONTENT_TYPE;
	}

	static get OPENMETRICS_CONTENT_TYPE() {
		return OPENMETRICS_CONTENT_TYPE;
	}

	constructor(regContentType = PROMETHEUS_CONTENT_TYPE) {
		checkContentType(regContentType, TypeError);
		this._metrics = {};
		this._collectors = [];
		this._defaultLabels = {};
		this._contentType = regContentType;
	}

	getMetricsAsArray() {
		return Object.values(this._metrics);
	}

	get _openMetrics() {
		return this._contentType === OPENMETRICS_CONTENT_TYPE;
	}

	/** One metric's lines, without a trailing newline. */
	async getMetricsAsString(metric) {
		const data =
			typeof metric.getForPromString === 'function'
				? await metric.getForPromString()
				: await metric.get();
		const name = escapeString(data.name);
		const lines = [
			`# HELP ${name} ${escapeString(data.help)}`,
			`# TYPE ${name} ${data.type}`,
		];
		const suffix = this._openMetrics && data.type === 'counter' ? '_total' : '';
		for (const val of data.values || []) {
			lines.push(this._line(name, suffix, val));
		}
		return lines.join('\n');
	}

	_line(name, suffix, val) {
		let labels = val.labels || {};
		if (Object.keys(this._defaultLabels).length > 0) {
			labels = { ...labels, ...this._defaultLabels, ...labels };
		}
		const shared = val.sharedLabels || {};
		const parts = formatLabels(labels, shared);
		const sharedText = formatLabels(shared).join(',');
		if (sharedText) parts.push(sharedText);
		const labelText = parts.length ? `{${parts.join(',')}}` : '';
		let line = `${val.metricName || name}${suffix}${labelText} ${getValueAsString(val.value)}`;
		const e = val.exemplar;
		if (e && this._openMetrics) {
			const exemplarLabels = formatLabels(e.labelSet).join(',');
			line += ` # {${exemplarLabels}} ${getValueAsString(e.value)} ${e.timestamp}`;
		}
		return line;
	}

	async metrics() {
		const open = this._openMetrics;
		const pages = await Promise.all(
			this.getMetricsAsArray().map(metric => {
				if (open && metric.type === 'counter') {
					metric.name = metric.name.replace(/_total$/, '');
				}
				return this.getMetricsAsString(metric);
			}),
		);
		return open ? `${pages.join('\n')}\n# EOF\n` : `${pages.join('\n\n')}\n`;
	}

	registerMetric(metric) {
		const had = this._metrics[metric.name];
		if (had && had !== metric) {
			throw new Error(
				`A metric with the name ${metric.name} has already been registered.`,
			);
		}
		this._metrics[metric.name] = metric;
	}

	clear() {
		this._metrics = {};
		this._defaultLabels = {};
	}

	async getMetricsAsJSON() {
		const defaults = Object.keys(this._defaultLabels);
		const items = await Promise.all(this.getMetricsAsArray().map(m => m.get()));
		for (const item of items) {
			if (!item.values || defaults.length === 0) continue;
			for (const val of item.values) {
				val.labels = Object.assign({}, val.labels);
				for (const name of defaults) {
					val.labels[name] = val.labels[name] || this._defaultLabels[name];
				}
			}
		}
		return items;
	}

	removeSingleMetric(name) {
		delete this._metrics[name];
	}

	getSingleMetricAsString(name) {
		return this.getMetricsAsString(this._metrics[name]);
	}

	getSingleMetric(name) {
		return this._metrics[name];
	}

	setDefaultLabels(labels) {
		this._defaultLabels = labels;
	}

	resetMetrics() {
		for (const metric of this.getMetricsAsArray()) metric.reset();
	}

	get contentType() {
		return this._contentType;
	}

	setContentType(type) {
		checkContentType(type, Error);
		this._contentType = type;
	}

	static merge(registers) {
		const type = registers[0].contentType;
		for (const reg of registers) {
			if (reg.contentType !== type) {
				throw new Error(
					'Registers can only be merged if they have the same content type',
				);
			}
		}
		const merged = new Registry(type);
		for (const reg of registers) {
			for (const metric of reg.getMetricsAsArray()) merged.registerMetric(metric);
		}
		return merged;
	}
}

function formatLabels(labels, exclude) {
	const out = [];
	for (const [name, value] of Object.entries(labels)) {
		if (exclude && Object.prototype.hasOwnProperty.call(exclude, name)) continue;
		out.push(`${name}="${escapeLabelValue(value)}"`);
	}
	return out;
}

function escapeLabelValue(value) {
	return typeof value === 'string' ? escapeString(value).replace(/"/g, '\\"') : value;
}

function escapeString(str) {
	return str.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

module.exports = Registry;
module.exports.globalRegistry = new Registry();
