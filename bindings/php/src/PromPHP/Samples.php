<?php

declare(strict_types=1);

namespace Shmetrics\PromPHP;

use FFI;
use Prometheus\MetricFamilySamples;
use Shmetrics\Native;
use Shmetrics\Snapshot;
use Shmetrics\Storage\Shmetrics;

/**
 * PromPHP's sample objects for every family of a store with series. The
 * library writes the families with their series in columns, in PHP's
 * serialize() format (SHMETRICS_FORMAT_PROMPHP_SERIES, see
 * crates/expo/src/promphp.rs: names, order, value types), in one call;
 * here each series becomes PromPHP's samples, in PromPHP's shapes: a
 * counter's or gauge's one sample under the family's name; a histogram's
 * `_bucket` samples (label `le`, cumulative, `+Inf` last), `_count` and
 * `_sum`; a summary's quantile samples (label `quantile`), `_count` and
 * `_sum`. A label the store adds (`pid`, `shmetrics_overflow`) comes
 * before `le` and `quantile`.
 *
 * @internal used by ShmetricsAdapter::collect()
 */
final class Samples
{
    /** SHMETRICS_FORMAT_PROMPHP_SERIES, and its variant with sorted series. */
    private const FORMAT = 3;
    private const FORMAT_SORTED = 4;

    /**
     * Whether the library (through FFI or the extension) renders FORMAT:
     * null until the first collect(), false when it predates it.
     */
    private static ?bool $rendered = null;

    private function __construct()
    {
    }

    /**
     * Every family of the store with series, in registration order; with
     * $sorted, the series of each sorted by their label values as
     * PromPHP's adapters sort them, else in creation order.
     *
     * @return list<MetricFamilySamples>
     * @throws \Shmetrics\Exception\StorageException the store cannot be read
     */
    public static function collect(Shmetrics $storage, bool $sorted): array
    {
        $out = [];
        foreach (self::families($storage, $sorted) as $family) {
            $family['samples'] = self::samples($family);
            $out[] = new MetricFamilySamples($family);
        }
        return $out;
    }

    /**
     * The families in columns, as the library writes them.
     *
     * @return list<array<string, mixed>>
     */
    private static function families(Shmetrics $storage, bool $sorted): array
    {
        if (self::$rendered === false) {
            return self::walk($storage, $sorted);
        }
        $format = $sorted ? self::FORMAT_SORTED : self::FORMAT;
        $ffi = $storage->ffi;
        $data = null;
        if ($ffi !== null) {
            $buf = $ffi->new('shmetrics_buf *');
            $rc = $ffi->shmetrics_render_alloc($storage->store, $format, FFI::addr($buf));
            if ($rc === Native::OK) {
                try {
                    $data = FFI::string($ffi->shmetrics_buf_data($buf), $ffi->shmetrics_buf_len($buf));
                } finally {
                    $ffi->shmetrics_buf_free($buf);
                }
            }
        } elseif (Native::extension()) {
            $rc = \Shmetrics\Ext\render($storage->store, $format, $data);
        } else {
            throw new \Error(Shmetrics::class . ' was not constructed');
        }
        if ($rc === Native::INVALID_ARGUMENT && self::$rendered === null) {
            // A library that predates the format, or an
            // extension whose render() lets PHP's exposition formats
            // through only: the snapshot walk, from now on.
            self::$rendered = false;
            return self::walk($storage, $sorted);
        }
        if ($rc !== Native::OK || !is_string($data)) {
            throw Native::exception($rc, 'cannot read the store ' . $storage->path());
        }
        self::$rendered = true;
        $families = unserialize($data, ['allowed_classes' => false]);
        if (!is_array($families)) {
            throw new \Error('PHP cannot read the series the library wrote for PromPHP');
        }
        return $families;
    }

    /**
     * The sample arrays of a family in columns: per sample, one array
     * whose strings (names, label values, `le`) are shared, as when
     * PromPHP builds them.
     *
     * @param array<string, mixed> $family
     * @return list<array{name: string, labelNames: list<string>, labelValues: list<mixed>, value: int|float}>
     */
    private static function samples(array $family): array
    {
        $name = $family['name'];
        $extra = $family['extra'];
        $numbers = $family['numbers'];
        $samples = [];
        if ($family['type'] === 'histogram') {
            // PromPHP's `le`: the bound as this PHP casts it to a string.
            $les = [];
            foreach ($family['buckets'] as $bound) {
                $les[] = (string) $bound;
            }
            $les[] = '+Inf';
            [$bucket, $count, $sum] = [$name . '_bucket', $name . '_count', $name . '_sum'];
            $counts = $family['counts'];
            $cumulative = $family['cumulative'];
            foreach ($family['values'] as $i => $values) {
                $names = $extra[$i] ?? [];
                $le = $names === [] ? ['le'] : [...$names, 'le'];
                foreach ($cumulative[$i] as $k => $n) {
                    $samples[] = ['name' => $bucket, 'labelNames' => $le, 'labelValues' => [...$values, $les[$k]],
                        'value' => $n];
                }
                $samples[] = ['name' => $count, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $counts[$i]];
                $samples[] = ['name' => $sum, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $numbers[$i]];
            }
        } elseif ($family['type'] === 'summary') {
            $quantiles = $family['quantiles'];
            [$count, $sum] = [$name . '_count', $name . '_sum'];
            $counts = $family['counts'];
            $estimates = $family['estimates'];
            foreach ($family['values'] as $i => $values) {
                $names = $extra[$i] ?? [];
                $quantile = $names === [] ? ['quantile'] : [...$names, 'quantile'];
                foreach ($estimates[$i] as $k => $estimate) {
                    $samples[] = ['name' => $name, 'labelNames' => $quantile,
                        'labelValues' => [...$values, $quantiles[$k]], 'value' => $estimate];
                }
                $samples[] = ['name' => $count, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $counts[$i]];
                $samples[] = ['name' => $sum, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $numbers[$i]];
            }
        } else {
            foreach ($family['values'] as $i => $values) {
                $samples[] = ['name' => $name, 'labelNames' => $extra[$i] ?? [], 'labelValues' => $values,
                    'value' => $numbers[$i]];
            }
        }
        return $samples;
    }

    /**
     * families() by a walk of the store's snapshot in PHP, for a library
     * that predates the format, or an extension built before its
     * `Shmetrics\Ext\render()` let it through (see docs/php.md): the same
     * columns.
     *
     * @return list<array<string, mixed>>
     */
    private static function walk(Shmetrics $storage, bool $sorted): array
    {
        $out = [];
        foreach (Snapshot::take($storage) as $family) {
            $series = $family['series'];
            if ($series === []) {
                continue;
            }
            if ($sorted) {
                usort($series, static fn (array $a, array $b): int
                    => strcmp(implode('', $a['labelValues']), implode('', $b['labelValues'])));
            }
            $type = $family['type'];
            $values = $extra = $numbers = $counts = $cumulative = $estimates = [];
            foreach ($series as $i => $s) {
                $values[] = [...$s['labelValues'], ...array_values($s['extra'])];
                if ($s['extra'] !== []) {
                    $extra[$i] = array_keys($s['extra']);
                }
                $numbers[] = $s['value'];
                if ($type === 'histogram' || $type === 'summary') {
                    $counts[] = $s['count'];
                }
                if ($type === 'histogram') {
                    $cumulative[] = $s['cumulative'];
                }
                if ($type === 'summary') {
                    $estimates[] = array_column($s['quantiles'], 1);
                }
            }
            $out[] = [
                'name' => $type === 'counter' && !$family['nameAsGiven'] ? $family['name'] . '_total' : $family['name'],
                'help' => $family['help'],
                'type' => $type,
                'labelNames' => $family['labelNames'],
                'values' => $values,
                'extra' => $extra,
                'numbers' => $numbers,
                'counts' => $counts,
                'cumulative' => $cumulative,
                'estimates' => $estimates,
                'buckets' => $family['buckets'],
                'quantiles' => $type === 'summary' ? array_column($series[0]['quantiles'], 0) : [],
            ];
        }
        return $out;
    }
}
