'use strict';

// The process's store: opened on first use, at SHMETRICS_STORE or the
// core's default path (/dev/shm/shmetrics). Every metric of every
// registry writes here, so `shmetrics serve` sees them all.
//
// A store removed and created again under the same path (an operator's
// wipe, a new deployment's) is opened again within a second: once a
// second an unref'd timer asks whether the path names another file, and
// `state.generation` goes up; each metric sees it on its next update and
// registers itself in the new file (lib/metric.js).

const { NativeStore } = require('../native');
const { native } = require('./errors');

const state = { generation: 0 };
let current = null;
let options;
let timer = null;

function watch() {
	if (timer !== null) return;
	timer = setInterval(() => {
		if (current !== null && current.replaced()) reopen();
	}, 1000);
	timer.unref();
}

function reopen() {
	try {
		current = new NativeStore(current.path, options);
		state.generation++;
	} catch {
		// Not openable now (half created): the next tick tries again.
	}
}

/** The store open now, opening it first if needed. */
function store() {
	if (current === null) {
		current = native(() => new NativeStore(process.env.SHMETRICS_STORE || undefined, options));
		watch();
	}
	return current;
}

/**
 * Opens `path` as the store for metrics made from now on; `opts` sizes it
 * if this creates it ({ maxSeries, maxFamilies, labelBytes, maxWriters }).
 */
function useStore(path, opts) {
	options = opts;
	current = native(() => new NativeStore(path, opts));
	watch();
	return current;
}

module.exports = { store, useStore, state };
