<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Counter;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Native;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Tests\Support\TestCase;

/**
 * Exemplars, which PromPHP does not have: `exemplars: true` when a counter
 * or histogram is registered, then an `$exemplar` array on inc(), incBy()
 * and observe(). Checked in the OpenMetrics exposition (`shmetrics dump
 * --format openmetrics`, what the exporter serves) with prometheus_client's
 * OpenMetrics parser.
 */
final class ExemplarsTest extends TestCase
{
    public function testLatestExemplarPerSeriesAndBucketAcrossProcesses(): void
    {
        $reg = $this->registry();
        $jobs = $reg->registerCounter('app', 'jobs_total', 'Jobs run.', ['queue'], exemplars: true);
        $lat = $reg->getOrRegisterHistogram('app', 'job_seconds', 'Job duration.', [], [0.1, 1], exemplars: true);
        $t0 = microtime(true);
        $jobs->inc(['email'], ['trace_id' => 'parent']);
        $jobs->incBy(3, ['sms'], ['trace_id' => 'sms-1', 'span_id' => 7]);
        $jobs->inc(['sms']);  // without an exemplar: the last one stays
        $lat->observe(0.05, [], ['trace_id' => 'parent-low']);
        $lat->observe(0.7, [], ['trace_id' => 'parent-mid']);
        $lat->observe(0.2);
        self::command([PHP_BINARY, __DIR__ . '/scripts/exemplars.php', $this->dir . '/store']);
        $t1 = microtime(true);

        $ex = self::exemplars(self::dump($this->dir . '/store', 'openmetrics'));
        // The other process wrote last: its exemplars win where both wrote.
        self::assertSame(['trace_id' => 'child'], $ex['app_jobs_total{queue="email"}']['labels']);
        self::assertSame(2.0, $ex['app_jobs_total{queue="email"}']['value']);
        self::assertSame(['trace_id' => 'sms-1', 'span_id' => '7'], $ex['app_jobs_total{queue="sms"}']['labels']);
        self::assertSame(3.0, $ex['app_jobs_total{queue="sms"}']['value']);
        self::assertSame(['trace_id' => 'parent-low'], $ex['app_job_seconds_bucket{le="0.1"}']['labels']);
        self::assertSame(0.05, $ex['app_job_seconds_bucket{le="0.1"}']['value']);
        self::assertSame(['trace_id' => 'child-mid'], $ex['app_job_seconds_bucket{le="1"}']['labels']);
        self::assertSame(0.5, $ex['app_job_seconds_bucket{le="1"}']['value']);
        self::assertArrayNotHasKey('app_job_seconds_bucket{le="+Inf"}', $ex);
        self::assertCount(4, $ex);
        foreach ($ex as $key => $e) {
            self::assertGreaterThanOrEqual(floor($t0), $e['timestamp'], $key);
            self::assertLessThanOrEqual($t1 + 1, $e['timestamp'], $key);
        }
        // The library's own rendering has the same exemplars.
        self::assertSame(
            array_map(fn ($e) => $e['labels'], $ex),
            array_map(fn ($e) => $e['labels'], self::exemplars($reg->getStorage()->render(Shmetrics::FORMAT_OPENMETRICS)))
        );
        // Every update counted; the text format 0.0.4 has no exemplars.
        $text = self::dump($this->dir . '/store');
        self::assertStringNotContainsString(' # ', $text);
        $s = self::samples($text);
        self::assertSame(3.0, $s['app_jobs_total{queue="email"}']);
        self::assertSame(4.0, $s['app_jobs_total{queue="sms"}']);
        self::assertSame(4.0, $s['app_job_seconds_count']);
        self::assertPromtoolAccepts($text);
    }

    public function testARefusedExemplarRefusesTheUpdate(): void
    {
        $reg = $this->registry();
        $c = $reg->registerCounter('', 'ex', 'E.', [], true);
        $h = $reg->registerHistogram('', 'ex_seconds', 'E.', [], [1], null, true);
        $cases = [
            // Exemplar label names follow the store's UTF-8 rule (PromPHP
            // has no exemplars): `trace-id` and a list's `0` are taken.
            'an empty name' => [['' => 'x'], Native::INVALID_NAME, 'empty'],
            'a reserved name' => [['__x' => 'y'], Native::INVALID_NAME, '__x'],
            'over 128 characters' => [['trace_id' => str_repeat('x', 121)], Native::INVALID_VALUE, '128'],
            'invalid UTF-8' => [['trace_id' => "\xff"], Native::INVALID_UTF8, 'UTF-8'],
            'an array value' => [['trace_id' => ['x']], 0, 'exemplar label values must be strings or numbers, got array'],
        ];
        foreach ($cases as $name => [$exemplar, $code, $text]) {
            foreach ([fn () => $c->incBy(1, [], $exemplar), fn () => $h->observe(0.5, [], $exemplar)] as $update) {
                try {
                    $update();
                    self::fail("an exemplar with $name was accepted");
                } catch (InvalidArgumentException $e) {
                    self::assertSame($code, $e->getCode(), $e->getMessage());
                    self::assertStringContainsString($text, $e->getMessage());
                }
            }
        }
        try {
            $c->incBy(-1, [], ['trace_id' => 'negative']);
            self::fail('a negative increment was accepted');
        } catch (InvalidArgumentException $e) {
            self::assertSame(Native::INVALID_VALUE, $e->getCode());
        }
        // 8 + 120 characters: at the limit. An empty exemplar has no labels.
        $c->inc([], ['trace_id' => str_repeat('x', 120)]);
        $h->observe(2, [], []);
        $s = $this->dumped($this->dir . '/store');
        self::assertSame(1.0, $s['ex'], 'only the accepted increment');
        self::assertSame(1.0, $s['ex_seconds_count'], 'only the accepted observation');
        $ex = self::exemplars(self::dump($this->dir . '/store', 'openmetrics'));
        self::assertSame(['trace_id' => str_repeat('x', 120)], $ex['ex_total']['labels']);
        self::assertSame([], $ex['ex_seconds_bucket{le="+Inf"}']['labels']);
        self::assertCount(2, $ex);
    }

    public function testExemplarsAreOptInAndPartOfTheDefinition(): void
    {
        $reg = $this->registry();
        $plain = $reg->registerCounter('', 'plain', 'P.');
        $plainH = $reg->registerHistogram('', 'plain_seconds', 'P.', [], [1]);
        foreach ([fn () => $plain->inc([], ['trace_id' => 'x']), fn () => $plainH->observe(1, [], ['trace_id' => 'x'])] as $update) {
            try {
                $update();
                self::fail('an exemplar was accepted without exemplars: true');
            } catch (InvalidArgumentException $e) {
                self::assertSame(Native::INVALID_OPTIONS, $e->getCode());
                self::assertStringContainsString('not registered with exemplars: true', $e->getMessage());
            }
        }
        self::assertSame(0.0, $this->dumped($this->dir . '/store')['plain'], 'nothing counted');
        // Another definition under the same name conflicts, in any process.
        try {
            new Counter($reg->getStorage(), '', 'plain', 'P.', [], true);
            self::fail('the same name with exemplars was accepted');
        } catch (MetricsRegistrationException $e) {
            self::assertSame(Native::CONFLICT, $e->getCode());
        }
        // A native-only histogram has no classic buckets to keep them in.
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionCode(Native::INVALID_OPTIONS);
        $reg->registerHistogram('', 'native_seconds', 'N.', [], null, [], exemplars: true);
    }

    public function testUpdatesWithExemplarsSurviveAWipe(): void
    {
        $reg = $this->registry();
        $c = $reg->registerCounter('', 'w', 'W.', ['k'], exemplars: true);
        $c->inc(['a'], ['trace_id' => 'before']);
        // Another process wipes the store: the handles go stale, and the
        // next update registers the family again.
        (new Shmetrics($this->dir . '/store'))->wipeStorage();
        $c->incBy(2, ['a'], ['trace_id' => 'after']);
        $ex = self::exemplars(self::dump($this->dir . '/store', 'openmetrics'));
        self::assertSame(['trace_id' => 'after'], $ex['w_total{k="a"}']['labels']);
        self::assertSame(2.0, $this->dumped($this->dir . '/store')['w{k="a"}']);
    }
}
