'use strict';

// A metric's family in the store, and what a process knows of it: which
// names it made a metric of already. A metric made again under such a name
// (after `registry.clear()`, or in another registry) starts from zero, as
// every new prom-client metric does; if its definition differs, it gets a
// store of its own (the shared store cannot drop a family that other
// processes may be writing), which this process's registries show but
// `shmetrics serve` does not.

const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { NativeStore } = require('../native');
const { store } = require('./store');
const { native, wrap } = require('./errors');

const made = new Set();

/**
 * The capacity of a store of this process's own, which holds the metrics
 * made again with another definition and those kept out of the cluster's
 * page: 0.5 MiB when made, 420 MiB of address space (the shared store's
 * default capacity takes 17 GiB of it).
 */
const PRIVATE = { maxSeries: 65536, maxFamilies: 1024, labelBytes: 8 << 20, maxWriters: 2 };

/** The stores of this process's own made so far, oldest first. */
const privateStores = [];

/**
 * A new store of this process's own: a file made in /dev/shm (else the
 * temporary directory) under a name no other process can guess, opened,
 * and unlinked at once, so that nothing is left behind however the
 * process ends, and no other process can open it.
 */
function newPrivateStore() {
	const dir = writable('/dev/shm') ? '/dev/shm' : os.tmpdir();
	const name = `shmetrics-node-${process.pid}-${crypto.randomBytes(12).toString('hex')}`;
	const file = path.join(dir, name);
	let opened;
	try {
		opened = native(() => new NativeStore(file, PRIVATE));
	} finally {
		try {
			fs.unlinkSync(file);
		} catch {
			// Not made (the open failed before creating it).
		}
	}
	privateStores.push(opened);
	return opened;
}

function writable(dir) {
	try {
		fs.accessSync(dir, fs.constants.W_OK);
		return true;
	} catch {
		return false;
	}
}

/**
 * Registers `spec` in the first store of this process's own that takes it
 * (one where its name is free or holds the same definition, with room for
 * it), making a store only when none does: a process that makes the same
 * name again and again with definitions it has used before makes no more
 * stores.
 */
function registerPrivately(spec) {
	for (const s of privateStores) {
		try {
			return s.register(spec);
		} catch (err) {
			const e = wrap(err);
			if (e.code !== 'Conflict' && e.code !== 'StoreFull') throw e;
		}
	}
	return native(() => newPrivateStore().register(spec));
}

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
	let family;
	try {
		family = omit ? registerPrivately(spec) : store().register(spec);
	} catch (err) {
		const e = wrap(err);
		if (!fresh || e.code !== 'Conflict') throw e;
		family = registerPrivately(spec);
	}
	if (fresh) native(() => family.clear());
	return family;
}

module.exports = { register };
