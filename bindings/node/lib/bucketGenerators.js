'use strict';

function linearBuckets(start, width, count) {
	if (count < 1) {
		throw new Error('Linear buckets needs a positive count');
	}
	return Array.from({ length: count }, (_, i) => start + i * width);
}

function exponentialBuckets(start, factor, count) {
	if (start <= 0) {
		throw new Error('Exponential buckets needs a positive start');
	}
	if (count < 1) {
		throw new Error('Exponential buckets needs a positive count');
	}
	if (factor <= 1) {
		throw new Error('Exponential buckets needs a factor greater than 1');
	}
	const buckets = [];
	let bound = start;
	for (let i = 0; i < count; i++) {
		buckets.push(bound);
		bound *= factor;
	}
	return buckets;
}

module.exports = { linearBuckets, exponentialBuckets };
