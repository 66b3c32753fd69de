'use strict';

const util = require('util');
const { ShmetricsError } = require('./errors');

// The names Prometheus' data model allows (prom-client checks the same).
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function validateMetricName(name) {
	return METRIC_NAME.test(name);
}

function validateLabelName(names = []) {
	return names.every(name => LABEL_NAME.test(name));
}

/** Throws if `labels` has a name outside `labelNames`. */
function validateLabel(labelNames, labels) {
	for (const name in labels) {
		if (!labelNames.includes(name)) {
			throw new ShmetricsError(
				`Added label "${name}" is not included in initial labelset: ${util.inspect(labelNames)}`,
				'InvalidName',
			);
		}
	}
}

module.exports = { validateMetricName, validateLabelName, validateLabel };
