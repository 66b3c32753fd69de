'use strict';

// Pushes a registry's page to a Pushgateway, as prom-client's Pushgateway
// does. The page holds the host's sum (the store's), whichever process
// pushes it.

const http = require('http');
const https = require('https');
const { gzipSync } = require('zlib');
const { globalRegistry } = require('./registry');

class Pushgateway {
	constructor(gatewayUrl, options, registry) {
		this.registry = registry || globalRegistry;
		this.gatewayUrl = gatewayUrl;
		const { requireJobName, ...requestOptions } = {
			requireJobName: true,
			...options,
		};
		this.requireJobName = requireJobName;
		this.requestOptions = requestOptions;
	}

	pushAdd(params = {}) {
		return this._send('POST', params);
	}

	push(params = {}) {
		return this._send('PUT', params);
	}

	delete(params = {}) {
		return this._send('DELETE', params);
	}

	_send(method, params) {
		if (this.requireJobName && !params.jobName) {
			throw new Error('Missing jobName parameter');
		}
		return send(this, method, params.jobName, params.groupings);
	}
}

/** The request options for `method` on the gateway's path for a job. */
function requestFor(gw, method, job, groupings) {
	const base = new URL(gw.gatewayUrl);
	const prefix = base.pathname && base.pathname !== '/' ? base.pathname : '';
	const jobPath = job ? `/job/${encodeURIComponent(job)}${groupingPath(groupings)}` : '';
	const options = {
		protocol: base.protocol,
		hostname: base.hostname,
		port: base.port || undefined,
		path: `${prefix}/metrics${jobPath}`,
		...gw.requestOptions,
		method,
	};
	if (base.username) {
		options.auth = `${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`;
	}
	return options;
}

function send(gw, method, job, groupings) {
	const options = requestFor(gw, method, job, groupings);
	const client = options.protocol === 'https:' ? https : http;
	return new Promise((resolve, reject) => {
		if (method === 'DELETE' && options.headers) {
			delete options.headers['Content-Encoding'];
		}
		const req = client.request(options, resp => {
			let body = '';
			resp.setEncoding('utf8');
			resp.on('data', chunk => {
				body += chunk;
			});
			resp.on('end', () => {
				if (resp.statusCode >= 400) {
					reject(new Error(`push failed with status ${resp.statusCode}, ${body}`));
				} else {
					resolve({ resp, body });
				}
			});
		});
		req.on('error', reject);
		req.on('timeout', () => req.destroy(new Error('Pushgateway request timed out')));
		if (method === 'DELETE') {
			req.end();
			return;
		}
		gw.registry
			.metrics()
			.then(page => {
				const gzip = options.headers && options.headers['Content-Encoding'] === 'gzip';
				req.end(gzip ? gzipSync(page) : page);
			})
			.catch(reject);
	});
}

function groupingPath(groupings) {
	if (!groupings) return '';
	return Object.keys(groupings)
		.map(k => `/${encodeURIComponent(k)}/${encodeURIComponent(groupings[k])}`)
		.join('');
}

module.exports = Pushgateway;
