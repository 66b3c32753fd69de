// TypeScript written for prom-client, with the import switched: the
// package's index.d.ts must take it as prom-client's own index.d.ts does
// (scripts/node-tests.sh compiles it with tsc --strict against both).
import * as client from 'shmetrics';
import { Counter, Gauge, Histogram, Summary, Registry, AggregatorRegistry, collectDefaultMetrics } from 'shmetrics';

const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'app_' });

const requests = new Counter<'method' | 'code'>({
	name: 'http_requests_total',
	help: 'Requests.',
	labelNames: ['method', 'code'] as const,
	registers: [registry],
});
requests.inc({ method: 'GET', code: 200 });
requests.labels('GET', '200').inc(2);
requests.labels({ method: 'POST' }).inc();

const inflight = new Gauge({ name: 'inflight', help: 'In flight.', aggregator: 'max' });
inflight.set(3);
inflight.inc();
const stop = inflight.startTimer();
stop();

const duration = new Histogram<'route'>({
	name: 'duration_seconds',
	help: 'Duration.',
	labelNames: ['route'],
	buckets: client.exponentialBuckets(0.01, 2, 8),
});
const end = duration.startTimer({ route: '/' });
end();
duration.labels('/').observe(0.3);
duration.zero({ route: '/users' });

const sizes = new Summary({ name: 'sizes', help: 'Sizes.', percentiles: [0.5, 0.99], maxAgeSeconds: 600, ageBuckets: 5 });
sizes.observe(10);

async function page(): Promise<string> {
	const json = await registry.getMetricsAsJSON();
	const names: string[] = json.map(m => m.name);
	const whole: string = await new AggregatorRegistry().clusterMetrics();
	return (await registry.metrics()) + names.join(',') + whole + client.register.contentType;
}

void page();
