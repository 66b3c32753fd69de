<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Snapshot;
use Shmetrics\Tests\Support\TestCase;

/**
 * Shmetrics\Snapshot reads the store through the C ABI's snapshot walk:
 * the same families, series and values as the exposition another process
 * (`shmetrics dump`) renders.
 */
final class SnapshotTest extends TestCase
{
    public function testEveryTypeReadsBackAsTheDumpShowsIt(): void
    {
        $registry = $this->registry();
        $registry->getOrRegisterCounter('app', 'jobs', 'Jobs run.', ['queue'])->incBy(3, ['mail']);
        $registry->getOrRegisterCounter('app', 'runs_total', 'Runs.')->inc();
        $registry->getOrRegisterGauge('app', 'workers', 'Per process.', [], 'all')->set(4);
        $h = $registry->getOrRegisterHistogram('app', 'seconds', 'Latency.', ['route'], [0.1, 1]);
        $h->observe(0.05, ['/']);
        $h->observe(5, ['/']);
        $s = $registry->getOrRegisterSummary('app', 'bytes', 'Sizes.', [], 600, [0.5]);
        foreach ([100, 200, 300] as $v) {
            $s->observe($v);
        }
        $families = Snapshot::take($registry->getStorage());
        $byName = array_column($families, null, 'name');
        self::assertSame(['app_jobs', 'app_runs', 'app_workers', 'app_seconds', 'app_bytes'], array_keys($byName));
        // PHP's counters keep their names: `jobs` as given, `runs_total`
        // through its name (the store keeps it without `_total`).
        self::assertSame(
            [true, false, false],
            [$byName['app_jobs']['nameAsGiven'], $byName['app_runs']['nameAsGiven'], $byName['app_workers']['nameAsGiven']]
        );

        $jobs = $byName['app_jobs'];
        self::assertSame(['counter', 'Jobs run.', ['queue']], [$jobs['type'], $jobs['help'], $jobs['labelNames']]);
        self::assertSame(['mail'], $jobs['series'][0]['labelValues']);
        self::assertSame(3.0, $jobs['series'][0]['value']);
        self::assertSame(['pid' => (string) getmypid()], $byName['app_workers']['series'][0]['extra']);

        $seconds = $byName['app_seconds'];
        self::assertSame([0.1, 1.0], $seconds['buckets']);
        self::assertSame([1, 1, 2], $seconds['series'][0]['cumulative']);
        self::assertSame([2, 5.05], [$seconds['series'][0]['count'], $seconds['series'][0]['value']]);

        $bytes = $byName['app_bytes']['series'][0];
        self::assertSame([3, 600.0], [$bytes['count'], $bytes['value']]);
        self::assertSame(0.5, $bytes['quantiles'][0][0]);

        $dumped = $this->dumped($registry->getStorage()->path());
        self::assertSame(3.0, $dumped['app_jobs{queue="mail"}']);
        self::assertSame(2.0, $dumped['app_seconds_bucket{route="/",le="+Inf"}']);
        self::assertSame($bytes['quantiles'][0][1], $dumped['app_bytes{quantile="0.5"}']);
    }

    public function testAnEmptyStoreHasNoFamilies(): void
    {
        self::assertSame([], Snapshot::take($this->store()));
    }
}
