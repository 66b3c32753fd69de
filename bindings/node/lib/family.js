'use strict';

// A metric's family in the store, and what a process knows of it: which
// names it made a metric of already. A metric made again under such a name
// (after `registry.clear()`, or in another registry) starts from zero, as
// every new prom-client metric does; if its definition differs, it gets a
// store of its own (the shared store cannot drop a family that other
// processes may be writing), which this process's registries show but
// `shmetrics serve` does not.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { NativeStore } = require('../native');
const { store } = require('./store');
const { native, wrap } = require('./errors');

const made = new Set();
const privateFiles = [];

function privateStore() {
	const file = path.join(
		os.tmpdir(),
		`shmetrics-node-${process.pid}-${privateFiles.length}`,
	);
	try {
		fs.unlinkSync(file);
	} catch {
		// Not there: the usual case.
	}
	privateFiles.push(file);
	if (privateFiles.length === 1) {
		process.on('exit', () => {
			for (const f of privateFiles) {
				try {
					fs.unlinkSync(f);
				} catch {
					// Gone already.
				}
			}
		});
	}
	return native(() => new NativeStore(file));
}

let local = null;

/**
 * Registers `spec` in the store (the same definition from another process
 * is the same family) and returns the family. `again`: the same metric
 * registering itself anew (the store was wiped or replaced), which keeps
 * what the store holds. `omit`: a metric whose aggregator is `omit`, which
 * prom-client's AggregatorRegistry leaves out of the cluster's page: it
 * goes to a store of this process's own, which its registries show and
 * `shmetrics serve` does not.
 */
function register(spec, { again = false, omit = false } = {}) {
	const fresh = !again && made.has(spec.name);
	made.add(spec.name);
	if (omit && local === null) local = privateStore();
	let family;
	try {
		family = (omit ? local : store()).register(spec);
	} catch (err) {
		const e = wrap(err);
		if (!fresh || e.code !== 'Conflict') throw e;
		family = native(() => privateStore().register(spec));
	}
	if (fresh) native(() => family.clear());
	return family;
}

module.exports = { register };
