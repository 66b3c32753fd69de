<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Histogram;
use Shmetrics\Native;
use Shmetrics\Tests\Support\Protobuf;
use Shmetrics\Tests\Support\TestCase;

/**
 * Native (exponential) histograms, the $native argument PromPHP does not
 * have: the classic part through the text exposition, the native buckets
 * through the protobuf one (`shmetrics dump --format protobuf`, what the
 * exporter serves Prometheus), read by a small decoder.
 */
final class NativeHistogramTest extends TestCase
{
    /** Schema 0 (bucket factor 2): bucket i holds (2^(i-1), 2^i]. */
    private const VALUES = [0.0, 0.25, 0.75, 3.0, 3.5, 100.0, -3.0];

    public function testNativeOnlyAndBoth(): void
    {
        $reg = $this->registry();
        $rpc = $reg->registerHistogram('app', 'rpc_seconds', 'RPC latency.', ['route'], null,
            ['bucketFactor' => 2, 'zeroThreshold' => 0.5]);
        $job = $reg->getOrRegisterHistogram('app', 'job_seconds', 'Job duration.', [], [1, 10],
            ['maxBucketNumber' => 0]);
        foreach (self::VALUES as $v) {
            $rpc->observe($v, ['/a']);
            $job->observe($v);
        }
        $n = count(self::VALUES);
        $sum = array_sum(self::VALUES);

        // The text formats: the classic part, only +Inf for native only.
        $text = self::dump($this->dir . '/store');
        $s = self::samples($text);
        self::assertSame((float) $n, $s['app_rpc_seconds_bucket{route="/a",le="+Inf"}']);
        self::assertSame((float) $n, $s['app_rpc_seconds_count{route="/a"}']);
        self::assertEqualsWithDelta($sum, $s['app_rpc_seconds_sum{route="/a"}'], 1e-9);
        self::assertSame(1, preg_match_all('/^app_rpc_seconds_bucket/m', $text), $text);
        self::assertSame(4.0, $s['app_job_seconds_bucket{le="1"}']);
        self::assertSame(6.0, $s['app_job_seconds_bucket{le="10"}']);
        self::assertSame((float) $n, $s['app_job_seconds_count']);
        self::assertPromtoolAccepts($text);

        $h = Protobuf::histograms(self::dump($this->dir . '/store', 'protobuf'));
        [$r] = $h['app_rpc_seconds'];
        self::assertSame($n, $r['count']);
        self::assertEqualsWithDelta($sum, $r['sum'], 1e-9);
        self::assertSame([], $r['classic'], 'native only: no classic buckets');
        self::assertSame(0, $r['schema']);
        self::assertSame(0.5, $r['zeroThreshold']);
        self::assertSame(2, $r['zeroCount'], '0 and 0.25 are within the zero threshold');
        self::assertSame([[0, 3], [4, 1]], $r['positiveSpans']);
        self::assertSame([0 => 1, 1 => 0, 2 => 2, 7 => 1], $r['positive']);
        self::assertSame([2 => 1], $r['negative']);

        [$j] = $h['app_job_seconds'];
        self::assertSame([[1.0, 4], [10.0, 6]], $j['classic'], 'both: classic buckets too');
        self::assertSame(3, $j['schema'], 'the default bucket factor, 1.1');
        self::assertSame(2.0 ** -64, $j['zeroThreshold'], 'the default threshold, raised to the least');
        self::assertSame(1, $j['zeroCount']);
        self::assertSame($n, $j['zeroCount'] + array_sum($j['positive']) + array_sum($j['negative']));
    }

    public function testNativeOptionsTakeTheDefaults(): void
    {
        $h = $this->registry()->registerHistogram('', 'd_seconds', 'D.', [], null, []);
        $h->observe(1.5);
        [$d] = Protobuf::histograms(self::dump($this->dir . '/store', 'protobuf'))['d_seconds'];
        self::assertSame(3, $d['schema']);
        self::assertSame([], $d['classic'], 'an empty $native still means native only');
        self::assertSame(1, array_sum($d['positive']));
    }

    public function testBadNativeOptionsAreRefused(): void
    {
        $reg = $this->registry();
        $cases = [
            'factor 1' => [['bucketFactor' => 1], Native::INVALID_OPTIONS, 'bucket factor'],
            'factor 0.5' => [['bucketFactor' => 0.5], Native::INVALID_OPTIONS, 'bucket factor'],
            'negative threshold' => [['zeroThreshold' => -1.0], Native::INVALID_OPTIONS, 'zero threshold'],
            'unknown key' => [['bucket_factor' => 1.1], 0, '"bucket_factor"'],
            'string factor' => [['bucketFactor' => '1.1'], 0, '"bucketFactor" must be a number'],
            'negative limit' => [['maxBucketNumber' => -1], 0, '"maxBucketNumber"'],
        ];
        foreach ($cases as $name => [$native, $code, $text]) {
            try {
                $reg->registerHistogram('', 'h_' . substr(md5($name), 0, 8), 'H.', [], null, $native);
                self::fail("native options with $name were accepted");
            } catch (InvalidArgumentException $e) {
                self::assertSame($code, $e->getCode(), $e->getMessage());
                self::assertStringContainsString($text, $e->getMessage());
            }
        }
    }

    public function testAnotherDefinitionConflicts(): void
    {
        $store = $this->store();
        new Histogram($store, '', 'c_seconds', 'C.', [], [1]);
        $this->expectException(MetricsRegistrationException::class);
        $this->expectExceptionCode(Native::CONFLICT);
        new Histogram($store, '', 'c_seconds', 'C.', [], [1], ['bucketFactor' => 1.1]);
    }
}
