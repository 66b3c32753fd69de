<?php

declare(strict_types=1);

namespace Shmetrics\Tests\Support;

/**
 * A small reader for the Prometheus protobuf exposition (delimited
 * `io.prometheus.client.MetricFamily` messages), so the tests need no
 * protobuf extension: only the histogram fields of client_model's
 * metrics.proto. Field numbers: MetricFamily name=1, metric=4; Metric
 * histogram=7; Histogram sample_count=1, sample_sum=2, bucket=3,
 * schema=5 (sint32), zero_threshold=6, zero_count=7, negative_span=9,
 * negative_delta=10, positive_span=12, positive_delta=13 (sint64);
 * BucketSpan offset=1 (sint32), length=2; Bucket cumulative_count=1,
 * upper_bound=2. (64-bit varints beyond PHP_INT_MAX do not occur here.)
 */
final class Protobuf
{
    /**
     * The histograms of an exposition, by family name, one array per
     * series: count, sum, classic ([bound, cumulative]...), schema,
     * zeroThreshold, zeroCount, positive and negative (bucket index =>
     * count, from the spans and deltas), positiveSpans ([offset, length]...).
     *
     * @return array<string, list<array<string, mixed>>>
     */
    public static function histograms(string $data): array
    {
        $out = [];
        $i = 0;
        while ($i < strlen($data)) {
            $n = self::varint($data, $i);
            $family = substr($data, $i, $n);
            $i += $n;
            $name = '';
            foreach (self::fields($family) as [$num, , $v]) {
                if ($num === 1) {
                    $name = $v;
                } elseif ($num === 4) {
                    foreach (self::fields($v) as [$mn, , $mv]) {
                        if ($mn === 7) {
                            $out[$name][] = self::histogram($mv);
                        }
                    }
                }
            }
        }
        return $out;
    }

    /** @return array<string, mixed> */
    private static function histogram(string $buf): array
    {
        $h = ['count' => 0, 'sum' => 0.0, 'classic' => [], 'schema' => null, 'zeroThreshold' => null,
            'zeroCount' => null, 'positiveSpans' => [], 'negativeSpans' => []];
        $deltas = [10 => [], 13 => []];
        foreach (self::fields($buf) as [$num, $wire, $v]) {
            match ($num) {
                1 => $h['count'] = $v,
                2 => $h['sum'] = $v,
                3 => $h['classic'][] = (static function (array $b): array {
                    return [$b[2] ?? 0.0, $b[1] ?? 0];
                })(array_column(self::fields($v), 2, 0)),
                5 => $h['schema'] = self::zigzag($v),
                6 => $h['zeroThreshold'] = $v,
                7 => $h['zeroCount'] = $v,
                9, 12 => $h[$num === 9 ? 'negativeSpans' : 'positiveSpans'][] = self::span($v),
                10, 13 => array_push($deltas[$num], ...self::sints($wire, $v)),
                default => null,
            };
        }
        $h['positive'] = self::buckets($h['positiveSpans'], $deltas[13]);
        $h['negative'] = self::buckets($h['negativeSpans'], $deltas[10]);
        return $h;
    }

    /**
     * @param list<array{int, int}> $spans
     * @param list<int> $deltas
     * @return array<int, int>
     */
    private static function buckets(array $spans, array $deltas): array
    {
        $out = [];
        $index = $count = $k = 0;
        foreach ($spans as [$offset, $length]) {
            $index += $offset;
            for ($j = 0; $j < $length; $j++) {
                $count += $deltas[$k++];
                $out[$index++] = $count;
            }
        }
        \PHPUnit\Framework\Assert::assertCount($k, $deltas, 'every delta belongs to a span');
        return $out;
    }

    /** @return array{int, int} */
    private static function span(string $buf): array
    {
        $f = array_column(self::fields($buf), 2, 0);
        return [self::zigzag($f[1] ?? 0), $f[2] ?? 0];
    }

    /** @return list<int> a repeated sint64 field's values, packed or not */
    private static function sints(int $wire, int|string $v): array
    {
        if ($wire === 0) {
            return [self::zigzag((int) $v)];
        }
        $out = [];
        $i = 0;
        while ($i < strlen((string) $v)) {
            $out[] = self::zigzag(self::varint((string) $v, $i));
        }
        return $out;
    }

    /** @return list<array{int, int, int|float|string}> (field number, wire type, value) */
    private static function fields(string $buf): array
    {
        $out = [];
        $i = 0;
        while ($i < strlen($buf)) {
            $key = self::varint($buf, $i);
            $wire = $key & 7;
            if ($wire === 0) {
                $v = self::varint($buf, $i);
            } elseif ($wire === 1) {
                $v = unpack('e', $buf, $i)[1];
                $i += 8;
            } elseif ($wire === 2) {
                $n = self::varint($buf, $i);
                $v = substr($buf, $i, $n);
                $i += $n;
            } else {
                throw new \UnexpectedValueException("wire type $wire is not used by metrics.proto");
            }
            $out[] = [$key >> 3, $wire, $v];
        }
        return $out;
    }

    private static function varint(string $buf, int &$i): int
    {
        $v = $shift = 0;
        do {
            $b = ord($buf[$i++]);
            $v |= ($b & 0x7F) << $shift;
            $shift += 7;
        } while ($b >= 0x80);
        return $v;
    }

    private static function zigzag(int $n): int
    {
        return ($n >> 1) ^ -($n & 1);
    }
}
