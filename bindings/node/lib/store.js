'use strict';

// The process's store: opened on first use, at SHMETRICS_STORE or the
// core's default path (/dev/shm/shmetrics). Every metric of every
// registry writes here, so `shmetrics serve` sees them all.

const { NativeStore } = require('../native');
const { native } = require('./errors');

let current = null;

/** The store open now, opening it first if needed. */
function store() {
	if (current === null) {
		current = native(() => new NativeStore(process.env.SHMETRICS_STORE || undefined));
	}
	return current;
}

/** Opens `path` as the store for metrics made from now on. */
function useStore(path) {
	current = native(() => new NativeStore(path));
	return current;
}

module.exports = { store, useStore };
