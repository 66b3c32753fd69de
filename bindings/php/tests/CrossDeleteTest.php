<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Tests\Support\TestCase;

/**
 * Deletion is seen by every process: another process wipes the store
 * (PromPHP's wipeStorage, the deletion PHP's API offers) while this one
 * keeps updating through the series it cached. Each update after the wipe
 * finds its handle stale, registers the family again, looks the series up
 * and lands in a new series from zero: every round's totals are exact.
 * And one exposed name is one family: a gauge may not take a counter's
 * `_total` name, nor a histogram's `_bucket` one.
 */
final class CrossDeleteTest extends TestCase
{
    private const ROUNDS = 4;
    private const PER_ROUND = 500;

    /** Wipes the store at $path from another PHP process. */
    private static function wipeElsewhere(string $path): void
    {
        $code = sprintf(
            'require %s; (new Shmetrics\CollectorRegistry(%s, false))->wipeStorage();',
            var_export(dirname(__DIR__) . '/autoload.php', true),
            var_export($path, true)
        );
        self::command([PHP_BINARY, '-r', $code]);
    }

    public function testCachedSeriesSurviveAWipeInAnotherProcess(): void
    {
        $reg = $this->registry();
        $path = $reg->getStorage()->path();
        $jobs = $reg->getOrRegisterCounter('app', 'jobs', 'Jobs.', ['queue']);
        $depth = $reg->getOrRegisterGauge('app', 'depth', 'Depth.', ['queue']);
        $wait = $reg->getOrRegisterHistogram('app', 'wait_seconds', 'Wait.', ['queue'], [0.1, 1]);
        for ($round = 0; $round < self::ROUNDS; $round++) {
            for ($i = 0; $i < self::PER_ROUND; $i++) {
                $jobs->inc(['email']);
                $wait->observe(0.5, ['email']);
            }
            $depth->set(7, ['email']);
            $s = $this->dumped($path);
            self::assertSame((float) self::PER_ROUND, $s['app_jobs{queue="email"}'], "round $round");
            self::assertSame((float) self::PER_ROUND, $s['app_wait_seconds_count{queue="email"}'], "round $round");
            self::assertSame((float) self::PER_ROUND, $s['app_wait_seconds_bucket{queue="email",le="1"}']);
            self::assertSame(7.0, $s['app_depth{queue="email"}']);

            self::wipeElsewhere($path);
            $s = $this->dumped($path);
            self::assertArrayNotHasKey('app_jobs{queue="email"}', $s);
            self::assertArrayNotHasKey('app_depth{queue="email"}', $s);
        }
    }

    /**
     * The same in this process: a wipe while the metric objects hold their
     * series' handles (the extension keeps one for label values updated
     * several times in a row), then more updates through the same objects,
     * with label arrays built each time and literal ones: every round's
     * totals are exact.
     */
    public function testHeldSeriesSurviveAWipeInThisProcess(): void
    {
        $reg = $this->registry();
        $path = $reg->getStorage()->path();
        $jobs = $reg->getOrRegisterCounter('app', 'jobs', 'Jobs.', ['queue']);
        $wait = $reg->getOrRegisterHistogram('app', 'wait_seconds', 'Wait.', ['queue'], [0.1, 1]);
        $queue = 'em';
        for ($round = 0; $round < 3; $round++) {
            for ($i = 0; $i < 50; $i++) {
                $jobs->inc([$queue . 'ail']);
                $wait->observe(0.5, ['email']);
            }
            $s = $this->dumped($path);
            self::assertSame(50.0, $s['app_jobs{queue="email"}'], "round $round");
            self::assertSame(50.0, $s['app_wait_seconds_count{queue="email"}'], "round $round");
            $reg->wipeStorage();
            self::assertArrayNotHasKey('app_jobs{queue="email"}', $this->dumped($path));
        }
    }

    public function testExposedNamesCollidingAcrossTypesAreRefused(): void
    {
        $reg = $this->registry();
        $reg->registerCounter('app', 'x', 'A counter.');
        try {
            $reg->registerGauge('app', 'x_total', 'A gauge.');
            self::fail('a gauge took the counter\'s exposed name app_x_total');
        } catch (MetricsRegistrationException $e) {
            self::assertStringContainsString('gauge "app_x_total"', $e->getMessage());
            self::assertStringContainsString('counter "app_x"', $e->getMessage());
        }
        $reg->registerHistogram('app', 'lat_seconds', 'A histogram.', [], [0.1]);
        $this->expectException(MetricsRegistrationException::class);
        $this->expectExceptionMessage('histogram "app_lat_seconds"');
        $reg->registerGauge('app', 'lat_seconds_bucket', 'A gauge.');
    }

    public function testNearCollisionsRenderAPagePromtoolAccepts(): void
    {
        $reg = $this->registry();
        $reg->registerCounter('app', 'x_total', 'A counter.')->inc();
        $reg->registerGauge('app', 'x_totals', 'A gauge.')->set(2);
        $reg->registerHistogram('app', 'y', 'A histogram.', [], [0.1])->observe(0.05);
        $reg->registerGauge('app', 'y_buckets', 'A gauge.')->set(3);
        $page = $reg->getStorage()->render();
        self::assertStringContainsString("# TYPE app_x_total counter\n", $page);
        self::assertPromtoolAccepts($page);
    }
}
