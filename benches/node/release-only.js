'use strict';

// Required first by every Node.js benchmark: refuses to time a debug build
// of the addon. `./run-tests` leaves one in bindings/node (scripts/setup.sh
// builds the tests' addon in debug), and `benches/node/run.sh` copies the
// release build over it.

const { buildProfile } = require('shmetrics/native');

if (buildProfile !== 'release') {
	console.error(
		`benches/node: the shmetrics addon is a ${buildProfile || 'debug'} build; ` +
			'run benches/node/run.sh, which builds the release one and puts it in place',
	);
	process.exit(2);
}
