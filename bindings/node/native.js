'use strict';

// Loads the native addon, as napi-rs packages do: the file next to this one
// (a package built in place), else the platform package that npm installed
// as an optional dependency (`shmetrics-linux-x64-gnu`).

const { join } = require('path');
const { existsSync } = require('fs');

function platformName() {
	if (process.platform !== 'linux' || process.arch !== 'x64') {
		return null;
	}
	// glibc reports its version; musl does not.
	const report = process.report && process.report.getReport();
	const glibc = report && report.header && report.header.glibcVersionRuntime;
	return glibc ? 'linux-x64-gnu' : null;
}

function load() {
	const platform = platformName();
	if (!platform) {
		throw new Error(
			`shmetrics has no native build for ${process.platform}-${process.arch}` +
				' (it ships linux-x64-gnu)',
		);
	}
	const local = join(__dirname, `shmetrics.${platform}.node`);
	if (existsSync(local)) {
		return require(local);
	}
	return require(`shmetrics-${platform}`);
}

module.exports = load();
