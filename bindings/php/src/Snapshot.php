<?php

declare(strict_types=1);

namespace Shmetrics;

use FFI;
use FFI\CData;
use Shmetrics\Storage\Shmetrics;

/**
 * The store's contents as PHP arrays, read through the C ABI's snapshot
 * walk (`shmetrics_snapshot_take` and friends): every family of the store,
 * registered by any process, with its series merged over all processes,
 * as the exporter would serve them now. For code that builds its own
 * sample objects, such as the PromPHP adapter's collect().
 *
 * Each family is `['name', 'help', 'type', 'nameAsGiven', 'labelNames',
 * 'buckets', 'series']`: `name` without suffixes (a counter's `_total` is
 * not part of it), `type` one of "counter", "gauge", "histogram",
 * "summary", `nameAsGiven` true for a counter that the text format names
 * `name` (registered without `_total` by this package, which PromPHP
 * serves so) rather than `name_total`, `buckets` a histogram's classic
 * bounds (without +Inf). Each series is
 * `['labelValues', 'extra', 'value', 'count', 'cumulative', 'quantiles']`:
 * `extra` the label the store adds (`['pid' => '1234']` for the gauge
 * modes "all" and "liveall", `['shmetrics_overflow' => 'true']` for an
 * overflow series) or `[]`; `value` a counter's or gauge's value, or a
 * histogram's or summary's sum; `count` their count; `cumulative` a
 * histogram's cumulative bucket counts, +Inf last; `quantiles` a
 * summary's estimates as [quantile, value] pairs (NaN when its window is
 * empty). Families come in registration order, series in creation order.
 */
final class Snapshot
{
    /** The C ABI's kinds (enum shmetrics_kind) by their type names. */
    public const TYPES = [1 => 'counter', 2 => 'gauge', 3 => 'histogram', 4 => 'summary'];

    private function __construct()
    {
    }

    /**
     * @return list<array{name: string, help: string, type: string, nameAsGiven: bool,
     *         labelNames: list<string>, buckets: list<float>, series: list<array<string, mixed>>}>
     * @throws Exception\StorageException the snapshot cannot be taken
     */
    public static function take(Shmetrics $storage): array
    {
        $ffi = $storage->ffi;
        if ($ffi === null && !Native::extension()) {
            throw new \Error(Shmetrics::class . ' was not constructed');
        }
        if ($ffi === null) {
            $rc = \Shmetrics\Ext\snapshot($storage->store, $families);
            if ($rc !== Native::OK) {
                throw Native::exception($rc, 'cannot take a snapshot of the store ' . $storage->path());
            }
            return $families;
        }
        $snap = $ffi->new('shmetrics_snapshot *');
        $rc = $ffi->shmetrics_snapshot_take($storage->store, FFI::addr($snap));
        if ($rc !== Native::OK) {
            throw Native::exception($rc, 'cannot take a snapshot of the store ' . $storage->path());
        }
        try {
            $f = $ffi->new('shmetrics_family_info');
            $s = $ffi->new('shmetrics_series_info');
            $families = [];
            $n = $ffi->shmetrics_snapshot_family_count($snap);
            for ($i = 0; $i < $n; $i++) {
                self::check($ffi->shmetrics_snapshot_family($snap, $i, FFI::addr($f)));
                $families[] = self::family($ffi, $snap, $i, $f, $s);
            }
            return $families;
        } finally {
            $ffi->shmetrics_snapshot_free($snap);
        }
    }

    /** @return array{name: string, help: string, type: string, nameAsGiven: bool, labelNames: list<string>, buckets: list<float>, series: list<array<string, mixed>>} */
    private static function family(FFI $ffi, CData $snap, int $i, CData $f, CData $s): array
    {
        $labels = [];
        for ($k = 0; $k < $f->label_count; $k++) {
            $labels[] = self::str($f->label_names[$k]);
        }
        $buckets = [];
        for ($k = 0; $k < $f->bucket_count; $k++) {
            $buckets[] = $f->buckets[$k];
        }
        $series = [];
        for ($j = 0; $j < $f->series_count; $j++) {
            self::check($ffi->shmetrics_snapshot_series($snap, $i, $j, FFI::addr($s)));
            $series[] = self::series($s, $f->label_count, $f->bucket_count);
        }
        return [
            'name' => self::str($f->name),
            'help' => self::str($f->help),
            'type' => self::TYPES[$f->kind] ?? 'unknown',
            'nameAsGiven' => $f->name_as_given !== 0,
            'labelNames' => $labels,
            'buckets' => $buckets,
            'series' => $series,
        ];
    }

    /** @return array<string, mixed> */
    private static function series(CData $s, int $labelCount, int $bucketCount): array
    {
        $values = [];
        for ($k = 0; $k < $labelCount; $k++) {
            $values[] = self::str($s->label_values[$k]);
        }
        $cumulative = [];
        if ($s->cumulative !== null) {
            for ($k = 0; $k <= $bucketCount; $k++) {
                $cumulative[] = $s->cumulative[$k];
            }
        }
        $quantiles = [];
        for ($k = 0; $k < $s->quantile_count; $k++) {
            $quantiles[] = [$s->quantiles[$k]->quantile, $s->quantiles[$k]->value];
        }
        $extra = $s->extra_label_name->len === 0
            ? []
            : [self::str($s->extra_label_name) => self::str($s->extra_label_value)];
        return [
            'labelValues' => $values,
            'extra' => $extra,
            'value' => $s->value,
            'count' => $s->count,
            'cumulative' => $cumulative,
            'quantiles' => $quantiles,
        ];
    }

    private static function str(CData $s): string
    {
        return $s->len === 0 ? '' : FFI::string($s->ptr, $s->len);
    }

    /** The walk fails only on a bug (an index out of range): report it as such. */
    private static function check(int $rc): void
    {
        if ($rc !== Native::OK) {
            throw Native::exception($rc, 'cannot walk the store snapshot');
        }
    }
}
