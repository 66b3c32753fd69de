<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Native;
use Shmetrics\Tests\Support\TestCase;

/**
 * Series TTL (`ttl:` seconds when a metric is registered), which PromPHP
 * does not have: a series that no process updated for the TTL is no
 * longer exported; a writer adding a series to the family later retires
 * it, and an update through a cached handle of it then looks the series
 * up again, which starts it from zero.
 */
final class TtlTest extends TestCase
{
    // Long enough for the updates and a `shmetrics dump` (a process start)
    // to come in before the TTL on a loaded machine: 0.2 s flaked at load 8.
    private const TTL = 1.0;
    private const IDLE_US = 2_250_000;

    public function testIdleSeriesExpireAndComeBackFromZero(): void
    {
        $reg = $this->registry();
        $c = $reg->registerCounter('app', 'visits', 'Visits.', ['user'], ttl: self::TTL);
        self::assertSame(self::TTL, $c->getTtl());
        $c->incBy(5, ['alice']);
        $path = $reg->getStorage()->path();
        self::assertSame(5.0, $this->dumped($path)['app_visits{user="alice"}']);

        usleep(self::IDLE_US);
        // Hidden at once, before any sweep.
        self::assertArrayNotHasKey('app_visits{user="alice"}', $this->dumped($path));

        // A new label set sweeps the family: alice's cached handle is stale
        // now, and the update through it looks the series up again.
        $c->inc(['bob']);
        $c->inc(['alice']);
        $s = $this->dumped($path);
        self::assertSame(1.0, $s['app_visits{user="alice"}']);
        self::assertSame(1.0, $s['app_visits{user="bob"}']);
        self::assertSame(1, $reg->getStorage()->stats()['series_expired_total']);
        // And the new handle is cached and used from then on.
        $c->inc(['alice']);
        self::assertSame(2.0, $this->dumped($path)['app_visits{user="alice"}']);
    }

    public function testSeriesUpdatedWithinTheTtlStay(): void
    {
        $reg = $this->registry();
        $c = $reg->getOrRegisterCounter('', 'jobs', 'Jobs.', ['queue'], ttl: 1.0);
        for ($i = 0; $i < 4; $i++) {
            $c->inc(['email']);
            usleep(100_000);
        }
        $c->inc(['sms']);
        $s = $this->dumped($reg->getStorage()->path());
        self::assertSame(4.0, $s['jobs{queue="email"}']);
        self::assertSame(1.0, $s['jobs{queue="sms"}']);
    }

    public function testEveryMetricTypeTakesATtl(): void
    {
        $reg = $this->registry();
        $g = $reg->registerGauge('', 'temp', 'Temperature.', ['room'], ttl: self::TTL);
        $gl = $reg->getOrRegisterGauge('', 'workers', 'Workers.', ['pool'], 'livesum', ttl: self::TTL);
        $h = $reg->registerHistogram('', 'lat_seconds', 'Latency.', ['route'], [0.1, 1], ttl: self::TTL);
        $sm = $reg->getOrRegisterSummary('', 'size_bytes', 'Size.', ['route'], 600, [0.5], ttl: self::TTL);
        $g->set(21.5, ['kitchen']);
        $gl->incBy(3, ['a']);
        $h->observe(0.5, ['/']);
        $sm->observe(100, ['/']);
        $path = $reg->getStorage()->path();
        $s = $this->dumped($path);
        self::assertSame(21.5, $s['temp{room="kitchen"}']);
        self::assertSame(3.0, $s['workers{pool="a"}']);
        self::assertSame(1.0, $s['lat_seconds_count{route="/"}']);
        self::assertSame(100.0, $s['size_bytes_sum{route="/"}']);

        usleep(self::IDLE_US);
        self::assertSame([], $this->dumped($path));

        // New label sets sweep each family; the stale cached handles then
        // find their series again, from zero.
        $g->set(1, ['hall']);
        $gl->inc(['b']);
        $h->observe(0.05, ['/new']);
        $sm->observe(1, ['/new']);
        $g->inc(['kitchen']);
        $gl->inc(['a']);
        $h->observe(2.0, ['/']);
        $sm->observe(7, ['/']);
        $s = $this->dumped($path);
        self::assertSame(1.0, $s['temp{room="kitchen"}']);
        self::assertSame(1.0, $s['temp{room="hall"}']);
        self::assertSame(1.0, $s['workers{pool="a"}']);
        self::assertSame(1.0, $s['lat_seconds_count{route="/"}']);
        self::assertSame(2.0, $s['lat_seconds_sum{route="/"}']);
        self::assertSame(0.0, $s['lat_seconds_bucket{route="/",le="1"}']);
        self::assertSame(1.0, $s['size_bytes_count{route="/"}']);
        self::assertSame(7.0, $s['size_bytes_sum{route="/"}']);
    }

    public function testAWipeStillReattachesTheFamily(): void
    {
        $reg = $this->registry();
        $c = $reg->registerCounter('', 'c', 'C.', ['l'], ttl: 60.0);
        $c->inc(['x']);
        $reg->wipeStorage();
        $c->inc(['x']);
        self::assertSame(1.0, $this->dumped($reg->getStorage()->path())['c{l="x"}']);
    }

    /** @return iterable<string, array{float}> */
    public static function badTtls(): iterable
    {
        yield 'zero' => [0.0];
        yield 'negative' => [-1.0];
        yield 'NaN' => [NAN];
        yield 'infinite' => [INF];
        yield 'below 0.1 s' => [0.01];
        yield 'above 49 days' => [1e9];
    }

    /** @dataProvider badTtls */
    public function testBadTtlsAreRefused(float $ttl): void
    {
        $reg = $this->registry();
        try {
            $reg->registerCounter('', 'bad', 'Bad.', [], ttl: $ttl);
            self::fail('no exception');
        } catch (InvalidArgumentException $e) {
            self::assertMatchesRegularExpression('/TTL|ttl/', $e->getMessage());
            self::assertContains($e->getCode(), [0, Native::INVALID_OPTIONS]);
        }
    }

    public function testTheTtlIsPartOfTheDefinition(): void
    {
        $this->registry()->registerCounter('', 'd', 'D.', [], ttl: 600.0);
        $this->expectException(MetricsRegistrationException::class);
        $this->registry()->registerCounter('', 'd', 'D.', []);
    }
}
