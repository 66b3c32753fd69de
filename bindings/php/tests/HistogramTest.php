<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Histogram;
use Shmetrics\Native;
use Shmetrics\Tests\Support\TestCase;

final class HistogramTest extends TestCase
{
    public function testObserveFillsCumulativeBuckets(): void
    {
        $h = $this->registry()->registerHistogram('app', 'latency_seconds', 'Latency.', ['route'], [0.1, 1, 10]);
        foreach ([0.05, 0.1, 0.5, 3, 30] as $v) {
            $h->observe($v, ['/']);
        }
        $s = $this->dumped($this->dir . '/store');
        self::assertSame(2.0, $s['app_latency_seconds_bucket{route="/",le="0.1"}']);
        self::assertSame(3.0, $s['app_latency_seconds_bucket{route="/",le="1"}']);
        self::assertSame(4.0, $s['app_latency_seconds_bucket{route="/",le="10"}']);
        self::assertSame(5.0, $s['app_latency_seconds_bucket{route="/",le="+Inf"}']);
        self::assertSame(5.0, $s['app_latency_seconds_count{route="/"}']);
        self::assertEqualsWithDelta(33.65, $s['app_latency_seconds_sum{route="/"}'], 1e-9);
        self::assertSame('histogram', $h->getType());
    }

    public function testDefaultBucketsArePromphps(): void
    {
        $h = $this->registry()->registerHistogram('', 'd', 'Default buckets.');
        $h->observe(0.3);
        $les = [];
        foreach (array_keys($this->dumped($this->dir . '/store')) as $k) {
            if (preg_match('/^d_bucket\{le="([^"]+)"\}$/', $k, $m) && $m[1] !== '+Inf') {
                $les[] = (float) $m[1];
            }
        }
        self::assertSame(Histogram::getDefaultBuckets(), $les);
    }

    public function testExponentialBuckets(): void
    {
        self::assertSame([1.0, 2.0, 4.0, 8.0], Histogram::exponentialBuckets(1, 2, 4));
        foreach ([[0, 2, 3], [1, 1, 3], [1, 2, 0]] as [$start, $factor, $n]) {
            try {
                Histogram::exponentialBuckets($start, $factor, $n);
                self::fail("exponentialBuckets($start, $factor, $n) was accepted");
            } catch (InvalidArgumentException) {
                $this->addToAssertionCount(1);
            }
        }
    }

    public function testBadDefinitionsAreRefused(): void
    {
        $reg = $this->registry();
        $cases = [
            'decreasing' => [[1, 0.5], Native::INVALID_OPTIONS, 'bucket'],
            'repeated' => [[1, 1], Native::INVALID_OPTIONS, 'bucket'],
            'empty' => [[], 0, 'at least one bound'],
        ];
        foreach ($cases as $name => [$buckets, $code, $text]) {
            try {
                $reg->registerHistogram('', "h_$name", 'H.', [], $buckets);
                self::fail("buckets $name were accepted");
            } catch (InvalidArgumentException $e) {
                self::assertSame($code, $e->getCode(), $e->getMessage());
                self::assertStringContainsString($text, $e->getMessage());
            }
        }
        try {
            $reg->registerHistogram('', 'h_le', 'H.', ['le']);
            self::fail("a label named le was accepted");
        } catch (InvalidArgumentException $e) {
            self::assertSame(Native::INVALID_NAME, $e->getCode());
        }
    }

    public function testNanObservationIsRefused(): void
    {
        $h = $this->registry()->registerHistogram('', 'h', 'H.');
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionCode(Native::INVALID_VALUE);
        $h->observe(NAN);
    }
}
