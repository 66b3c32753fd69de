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
 * crates/expo/src/promphp.rs: layout, names, order, value types), in one
 * call, each distinct list of label names or values once; here each
 * series becomes PromPHP's samples, in PromPHP's shapes: a counter's or
 * gauge's one sample under the family's name; a histogram's `_bucket`
 * samples (label `le`, cumulative, `+Inf` last), `_count` and `_sum`; a
 * summary's quantile samples (label `quantile`), `_count` and `_sum`. A
 * label the store adds (`pid`, `shmetrics_overflow`) comes before `le`
 * and `quantile`. Samples with the same label values share one array of
 * them, as they share their strings when PromPHP builds them.
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
        ['families' => $families, 'lists' => $lists] = self::families($storage, $sorted);
        $out = [];
        $appended = [];
        foreach ($families as $family) {
            [$name, $help, $type, $labelNames] = $family;
            $out[] = new MetricFamilySamples(['name' => $name, 'help' => $help, 'type' => $type,
                'labelNames' => $lists[$labelNames], 'samples' => self::samples($family, $lists, $appended)]);
        }
        return $out;
    }

    /**
     * The families in columns and the lists they name, as the library
     * writes them.
     *
     * @return array{families: list<list<mixed>>, lists: list<list<string>>}
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
        $columns = unserialize($data, ['allowed_classes' => false]);
        if (!is_array($columns) || !isset($columns['families'], $columns['lists'])) {
            if (self::$rendered === null && is_array($columns)) {
                // A library that wrote the format before it had the
                // lists table: the snapshot walk, from now on.
                self::$rendered = false;
                return self::walk($storage, $sorted);
            }
            throw new \Error('PHP cannot read the series the library wrote for PromPHP');
        }
        self::$rendered = true;
        return $columns;
    }

    /**
     * The sample arrays of a family in columns: per sample, one array
     * whose strings (names, label values, `le`) are shared, as when
     * PromPHP builds them, and whose label values are one array for
     * every sample with the same: a series' list of $lists, or that list
     * with `le` or `quantile` added, kept in $appended (by the bounds or
     * quantiles, serialized, then the list's index) for the families that
     * follow.
     *
     * @param list<mixed> $family
     * @param list<list<string>> $lists
     * @param array<string, array<int, list<list<mixed>>>> $appended
     * @return list<array{name: string, labelNames: list<string>, labelValues: list<mixed>, value: int|float}>
     */
    private static function samples(array $family, array $lists, array &$appended): array
    {
        [$name, , $type, , $series, $extra, $numbers, $counts, $cumulative, $estimates, $buckets, $quantiles]
            = $family;
        $samples = [];
        if ($type === 'histogram') {
            // PromPHP's `le`: the bound as this PHP casts it to a string.
            $les = [];
            foreach ($buckets as $bound) {
                $les[] = (string) $bound;
            }
            $les[] = '+Inf';
            $withLe = &$appended[serialize($les)];
            [$bucket, $count, $sum] = [$name . '_bucket', $name . '_count', $name . '_sum'];
            foreach ($series as $i => $list) {
                $values = $lists[$list];
                $names = isset($extra[$i]) ? $lists[$extra[$i]] : [];
                $le = $names === [] ? ['le'] : [...$names, 'le'];
                $bucketValues = $withLe[$list] ??= self::appended($values, $les);
                foreach ($cumulative[$i] as $k => $n) {
                    $samples[] = ['name' => $bucket, 'labelNames' => $le, 'labelValues' => $bucketValues[$k],
                        'value' => $n];
                }
                $samples[] = ['name' => $count, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $counts[$i]];
                $samples[] = ['name' => $sum, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $numbers[$i]];
            }
        } elseif ($type === 'summary') {
            $withQuantile = &$appended[serialize($quantiles)];
            [$count, $sum] = [$name . '_count', $name . '_sum'];
            foreach ($series as $i => $list) {
                $values = $lists[$list];
                $names = isset($extra[$i]) ? $lists[$extra[$i]] : [];
                $quantile = $names === [] ? ['quantile'] : [...$names, 'quantile'];
                $quantileValues = $withQuantile[$list] ??= self::appended($values, $quantiles);
                foreach ($estimates[$i] as $k => $estimate) {
                    $samples[] = ['name' => $name, 'labelNames' => $quantile, 'labelValues' => $quantileValues[$k],
                        'value' => $estimate];
                }
                $samples[] = ['name' => $count, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $counts[$i]];
                $samples[] = ['name' => $sum, 'labelNames' => $names, 'labelValues' => $values,
                    'value' => $numbers[$i]];
            }
        } elseif ($extra === []) {
            foreach ($series as $i => $list) {
                $samples[] = ['name' => $name, 'labelNames' => [], 'labelValues' => $lists[$list],
                    'value' => $numbers[$i]];
            }
        } else {
            foreach ($series as $i => $list) {
                $samples[] = ['name' => $name, 'labelNames' => isset($extra[$i]) ? $lists[$extra[$i]] : [],
                    'labelValues' => $lists[$list], 'value' => $numbers[$i]];
            }
        }
        return $samples;
    }

    /**
     * $values with each of $more added in turn.
     *
     * @param list<string> $values
     * @param list<mixed> $more
     * @return list<list<mixed>>
     */
    private static function appended(array $values, array $more): array
    {
        $out = [];
        foreach ($more as $x) {
            $out[] = [...$values, $x];
        }
        return $out;
    }

    /**
     * families() by a walk of the store's snapshot in PHP, for a library
     * that predates the format, or an extension built before its
     * `Shmetrics\Ext\render()` let it through (see docs/php.md): the same
     * columns and lists.
     *
     * @return array{families: list<list<mixed>>, lists: list<list<string>>}
     */
    private static function walk(Shmetrics $storage, bool $sorted): array
    {
        $out = $lists = $index = [];
        // A list's index in $lists, added if new, as the library numbers them.
        $of = static function (array $list) use (&$lists, &$index): int {
            $key = serialize($list);
            if (!isset($index[$key])) {
                $index[$key] = count($lists);
                $lists[] = $list;
            }
            return $index[$key];
        };
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
            $labelNames = $of($family['labelNames']);
            $values = $extra = $numbers = $counts = $cumulative = $estimates = [];
            foreach ($series as $s) {
                $values[] = $of([...$s['labelValues'], ...array_values($s['extra'])]);
            }
            foreach ($series as $i => $s) {
                if ($s['extra'] !== []) {
                    $extra[$i] = $of(array_keys($s['extra']));
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
                $type === 'counter' && !$family['nameAsGiven'] ? $family['name'] . '_total' : $family['name'],
                $family['help'],
                $type,
                $labelNames,
                $values,
                $extra,
                $numbers,
                $counts,
                $cumulative,
                $estimates,
                $family['buckets'],
                $type === 'summary' ? array_column($series[0]['quantiles'], 0) : [],
            ];
        }
        return ['families' => $out, 'lists' => $lists];
    }
}
