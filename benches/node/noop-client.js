'use strict';

// Metrics with prom-client's shape whose calls do nothing: the "noop" app
// of express-app.js and middleware-cost.js, which tells what the shape of
// the metric code costs from what a library adds.

class Metric {
	inc() {}
	startTimer() {
		return () => 0;
	}
}

module.exports = { AggregatorRegistry: class {}, Counter: Metric, Histogram: Metric };
