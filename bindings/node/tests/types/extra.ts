// What shmetrics adds to prom-client's API, typed.
import { Counter, ShmetricsError, useStore } from 'shmetrics';

useStore('/dev/shm/app.shm', { maxSeries: 100000 });
const requests = new Counter({ name: 'jobs_total', help: 'Jobs.' });
try {
	requests.inc(NaN);
} catch (e) {
	if (e instanceof ShmetricsError) console.log(e.code);
}
