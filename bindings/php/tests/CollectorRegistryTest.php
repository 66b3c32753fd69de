<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\CollectorRegistry;
use Shmetrics\Counter;
use Shmetrics\Exception\MetricNotFoundException;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Gauge;
use Shmetrics\Histogram;
use Shmetrics\Native;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Summary;
use Shmetrics\Tests\Support\TestCase;

final class CollectorRegistryTest extends TestCase
{
    /** @return iterable<string, array{string, class-string}> */
    public static function types(): iterable
    {
        yield 'counter' => ['Counter', Counter::class];
        yield 'gauge' => ['Gauge', Gauge::class];
        yield 'histogram' => ['Histogram', Histogram::class];
        yield 'summary' => ['Summary', Summary::class];
    }

    /** @dataProvider types */
    public function testRegisterGetAndGetOrRegister(string $type, string $class): void
    {
        $reg = $this->registry();
        $m = $reg->{"register$type"}('app', 'thing', 'A thing.', ['l']);
        self::assertInstanceOf($class, $m);
        self::assertSame($m, $reg->{"get$type"}('app', 'thing'));
        self::assertSame($m, $reg->{"getOrRegister$type"}('app', 'thing', 'A thing.', ['l']));
        $other = $reg->{"getOrRegister$type"}('app', 'other', 'Another.', []);
        self::assertInstanceOf($class, $other);
        self::assertSame($other, $reg->{"get$type"}('app', 'other'));
        try {
            $reg->{"register$type"}('app', 'thing', 'A thing.', ['l']);
            self::fail('registered twice');
        } catch (MetricsRegistrationException $e) {
            self::assertStringContainsString('already registered in this registry', $e->getMessage());
        }
        try {
            $reg->{"get$type"}('app', 'missing');
            self::fail('found a metric never registered');
        } catch (MetricNotFoundException $e) {
            self::assertStringContainsString('app_missing', $e->getMessage());
        }
    }

    public function testTheSameDefinitionIsSharedAndAnotherIsRefused(): void
    {
        $path = $this->dir . '/store';
        $a = new CollectorRegistry($path, false);
        $b = new CollectorRegistry(new Shmetrics($path), false);
        $a->registerCounter('', 'hits', 'Hits.', ['page'])->inc(['x']);
        $b->registerCounter('', 'hits', 'Hits.', ['page'])->inc(['x']);
        self::assertSame(2.0, $this->dumped($path)['hits{page="x"}']);
        foreach ([
            fn () => $b->registerGauge('', 'hits', 'Hits.', ['page']),
            fn () => $b->registerHistogram('', 'hits', 'Hits.', ['page']),
        ] as $conflicting) {
            try {
                $conflicting();
                self::fail('a conflicting definition was accepted');
            } catch (MetricsRegistrationException $e) {
                self::assertSame(Native::CONFLICT, $e->getCode());
                self::assertStringContainsString('already registered as a counter', $e->getMessage());
            }
        }
        $c = new CollectorRegistry($path, false);
        $this->expectException(MetricsRegistrationException::class);
        $c->registerCounter('', 'hits', 'Hits.', ['page', 'extra']);
    }

    /**
     * A process keeps the definitions it registered (the extension: with
     * its series' handles, for the next request). A definition given
     * otherwise but the same (bounds as integers, labels not a list, the
     * name split elsewhere), or differing only in its help, is the same
     * family; each object keeps what it was given. One that differs is
     * refused, though the process keeps a definition of that name.
     */
    public function testWhatAProcessKeepsOfADefinitionMatchesOnlyThatDefinition(): void
    {
        $path = $this->dir . '/store';
        $reg = fn (): CollectorRegistry => new CollectorRegistry($path, false);
        $h1 = $reg()->getOrRegisterHistogram('app', 'lat', 'Latency.', ['route'], [1, 2]);
        $h2 = $reg()->getOrRegisterHistogram('app', 'lat', 'Latency.', [3 => 'route'], [1.0, 2.0]);
        $h1->observe(0.5, ['/a']);
        $h2->observe(1.5, ['/a']);
        $c1 = $reg()->getOrRegisterCounter('app', 'hits', 'Hits.', ['page']);
        $c2 = $reg()->getOrRegisterCounter('app', 'hits', 'Page hits.', ['page']);
        $c3 = $reg()->getOrRegisterCounter('app', 'hits', 'Hits.', ['page']);
        $c4 = $reg()->getOrRegisterCounter('', 'app_hits', 'Hits.', ['page']);
        foreach ([$c1, $c2, $c3, $c4] as $c) {
            $c->inc(['x']);
            self::assertSame('app_hits', $c->getName());
            self::assertSame(['page'], $c->getLabelNames());
            self::assertSame($c1->getKey(), $c->getKey());
        }
        self::assertSame(['Hits.', 'Page hits.', 'Hits.'], [$c1->getHelp(), $c2->getHelp(), $c3->getHelp()]);
        self::assertSame(['route'], $h2->getLabelNames());
        foreach ([
            'other bounds' => fn () => $reg()->getOrRegisterHistogram('app', 'lat', 'Latency.', ['route'], [1, 3]),
            'the default bounds' => fn () => $reg()->getOrRegisterHistogram('app', 'lat', 'Latency.', ['route']),
            'other labels' => fn () => $reg()->getOrRegisterCounter('app', 'hits', 'Hits.', ['page', 'extra']),
            'labels in another order' => fn () => $reg()->getOrRegisterHistogram('app', 'lat', 'Latency.', ['x', 'route'], [1, 2]),
            'exemplars' => fn () => $reg()->getOrRegisterCounter('app', 'hits', 'Hits.', ['page'], true),
            'another type' => fn () => $reg()->getOrRegisterGauge('app', 'lat', 'Latency.', ['route']),
        ] as $what => $conflicting) {
            try {
                $conflicting();
                self::fail("a definition with $what was accepted");
            } catch (MetricsRegistrationException $e) {
                self::assertSame(Native::CONFLICT, $e->getCode(), $what);
            }
        }
        $reg()->getOrRegisterCounter('app', 'hits', 'Page hits.', ['page'])->incBy(10, ['x']);
        // More helps than the extension keeps definitions of one name (8): the others still count.
        for ($i = 0; $i < 12; $i++) {
            $c = $reg()->getOrRegisterCounter('app', 'hits', "Hits, help $i.", ['page']);
            $c->inc(['x']);
            $c->inc(['y']);
            self::assertSame("Hits, help $i.", $c->getHelp());
        }
        $s = $this->dumped($path);
        self::assertSame(26.0, $s['app_hits{page="x"}']);
        self::assertSame(12.0, $s['app_hits{page="y"}']);
        self::assertSame(1.0, $s['app_lat_bucket{route="/a",le="1"}']);
        self::assertSame(2.0, $s['app_lat_count{route="/a"}']);
    }

    public function testDefaultMetricsAndGetDefault(): void
    {
        $path = $this->dir . '/default';
        putenv("SHMETRICS_STORE=$path");
        try {
            $reg = CollectorRegistry::getDefault();
            self::assertSame($reg, CollectorRegistry::getDefault());
            self::assertSame($path, $reg->getStorage()->path());
            $reg->getOrRegisterCounter('', 'via_default', 'Through getDefault.')->inc();
        } finally {
            putenv('SHMETRICS_STORE');
        }
        $s = $this->dumped($path);
        self::assertSame(1.0, $s['php_info{version="' . PHP_VERSION . '"}']);
        self::assertSame(1.0, $s['via_default']);
    }

    public function testWipeStorageThenUpdatesRegisterAgain(): void
    {
        $path = $this->dir . '/store';
        $reg = new CollectorRegistry($path, false);
        $c = $reg->registerCounter('', 'c', 'C.', ['l']);
        $h = $reg->registerHistogram('', 'h', 'H.', [], [1]);
        $c->inc(['a']);
        $h->observe(0.5);
        $reg->wipeStorage();
        self::assertSame([], $this->dumped($path));
        $c->inc(['a']);
        $h->observe(2);
        $s = $this->dumped($path);
        self::assertSame(1.0, $s['c{l="a"}']);
        self::assertSame(0.0, $s['h_bucket{le="1"}']);
        self::assertSame(1.0, $s['h_count']);

        // A wipe by another process too.
        self::command([PHP_BINARY, __DIR__ . '/scripts/wipe.php', $path]);
        $c->incBy(2, ['b']);
        self::assertSame(['c{l="b"}' => 2.0], $this->dumped($path));
    }
}
