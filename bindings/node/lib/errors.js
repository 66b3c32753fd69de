'use strict';

/**
 * The error the binding throws when the store refuses a call: wrong label
 * values, NaN, a full store, a replaced or damaged store file. `code` is
 * the core's error kind ('LabelCount', 'InvalidValue', 'StoreFull',
 * 'StaleHandle', ...).
 */
class ShmetricsError extends Error {
	constructor(message, code) {
		super(message);
		this.name = 'ShmetricsError';
		this.code = code;
	}
}

// The native half puts the kind at the head of the message (see
// bindings/node/src/errors.rs).
const KIND = /^\[(\w+)\] ([\s\S]*)$/;

/** A native error as a ShmetricsError; anything else as it is. */
function wrap(err) {
	if (err instanceof ShmetricsError || !err || typeof err.message !== 'string') {
		return err;
	}
	const m = KIND.exec(err.message);
	return m ? new ShmetricsError(m[2], m[1]) : err;
}

/** Calls `fn` and rethrows a native error as a ShmetricsError. */
function native(fn) {
	try {
		return fn();
	} catch (err) {
		throw wrap(err);
	}
}

module.exports = { ShmetricsError, wrap, native };
