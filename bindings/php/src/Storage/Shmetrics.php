<?php

declare(strict_types=1);

namespace Shmetrics\Storage;

use FFI;
use FFI\CData;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Checks;
use Shmetrics\Exposition;
use Shmetrics\Native;

/**
 * A shmetrics store: the storage adapter, in PromPHP's terms, that takes
 * the place of APCng. Every process that opens the same file shares its
 * metrics; the exporter (`shmetrics serve --store PATH`) serves them.
 *
 * The store is opened once per process, not once per request: the library
 * keeps the handle for the life of the worker, so constructing this object
 * in every request costs one C call after the first
 * (`shmetrics_store_persistent`), which also checks that the path still
 * names the file the handle mapped: a store removed and created again, or
 * replaced by a rename, is opened again (`shmetrics_store_reopen_persistent`),
 * so that the request's updates land in the file the exporter serves. A
 * forked child gets a writer slot of its own on its first update.
 *
 * This class is the FFI implementation. The shmetrics extension, when
 * loaded, declares its own Shmetrics\Storage\Shmetrics (the same API, in
 * C, with the store's handle kept per process), and this file is then
 * never loaded: `$ffi` is null there and `$store` a Shmetrics\Ext\Store.
 */
final class Shmetrics
{
    /** Prometheus text format 0.0.4. */
    public const FORMAT_TEXT = 0;
    /** OpenMetrics 1.0 text. */
    public const FORMAT_OPENMETRICS = 1;

    /** @internal null in the extension's class */
    public ?FFI $ffi = null;
    /** @internal the `shmetrics_store *` (a Shmetrics\Ext\Store in the extension's class) */
    public CData $store;
    private string $path;

    /**
     * Opens the store file at $path, creating it if needed. Without a
     * path, $SHMETRICS_STORE names it, else /dev/shm/shmetrics.
     *
     * $options apply when the file is created (an existing store keeps
     * its own): `max_families` (4096), `max_series` (65536),
     * `label_bytes` (16 MiB), `max_writers` (128), `cells_per_writer`,
     * `sketch_cells_per_writer` (summary quantile sketches, 2097152),
     * `mode` (0600 or 0660); plus `create` (true) and `read_only` (false).
     *
     * @param array<string, bool|int> $options
     * @throws \Shmetrics\Exception\StorageException the file is missing (with create => false), foreign,
     *         cut short, corrupt or of another layout version; the message names it
     * @throws InvalidArgumentException an unknown option or a value out of range
     */
    public function __construct(?string $path = null, array $options = [])
    {
        if ($path === null) {
            $env = getenv('SHMETRICS_STORE');
            $path = is_string($env) && $env !== '' ? $env : '/dev/shm/shmetrics';
        }
        if ($path === '') {
            throw Checks::emptyStorePath();
        }
        $this->path = $path;
        if ($options !== []) {
            Checks::storeOptions($options);
        }
        $this->ffi = $ffi = Native::ffi();
        $store = $ffi->shmetrics_store_persistent($path, strlen($path), $options['read_only'] ?? false);
        if ($store === null) {
            $opts = $ffi->new('shmetrics_options');
            $ffi->shmetrics_options_default(FFI::addr($opts));
            foreach ($options as $key => $value) {
                $opts->{$key} = $value;
            }
            $store = $ffi->new('shmetrics_store *');
            $rc = $ffi->shmetrics_store_reopen_persistent($path, strlen($path), FFI::addr($opts), FFI::addr($store));
            if ($rc !== Native::OK) {
                throw Native::exception($rc, "cannot open the store");
            }
        }
        $this->store = $store;
    }

    /** $ffi, set by the constructor (an object made without it throws, as the extension's class does). */
    private function ffi(): FFI
    {
        return $this->ffi ?? throw new \Error(self::class . ' was not constructed');
    }

    /**
     * @param array<mixed> $numbers
     */
    private static function pack(string $what, array $numbers): string
    {
        Checks::numbers($what, $numbers);
        return pack('e*', ...$numbers);
    }

    /** The store file's path. */
    public function path(): string
    {
        return $this->path;
    }

    /**
     * Removes every metric of the store, in every process (PromPHP's
     * wipeStorage). Metric objects stay usable: their next update
     * registers them again.
     */
    public function wipeStorage(): void
    {
        $rc = $this->ffi()->shmetrics_store_wipe($this->store);
        if ($rc !== Native::OK) {
            throw Native::exception($rc, "cannot wipe the store {$this->path}");
        }
    }

    /**
     * The whole store, all processes merged, as an exposition in $format
     * (FORMAT_TEXT or FORMAT_OPENMETRICS), rendered by the library.
     */
    public function render(int $format = self::FORMAT_TEXT): string
    {
        $ffi = $this->ffi();
        $buf = $ffi->new('shmetrics_buf *');
        $rc = $ffi->shmetrics_render_alloc($this->store, Checks::format($format), FFI::addr($buf));
        if ($rc !== Native::OK) {
            throw Native::exception($rc, "cannot render the store {$this->path}");
        }
        try {
            return FFI::string($ffi->shmetrics_buf_data($buf), $ffi->shmetrics_buf_len($buf));
        } finally {
            $ffi->shmetrics_buf_free($buf);
        }
    }

    /** The HTTP Content-Type of an exposition in $format. */
    public function contentType(int $format = self::FORMAT_TEXT): string
    {
        $type = $this->ffi()->shmetrics_format_content_type(Checks::format($format));
        if ($type === null) {
            throw Checks::unknownFormat($format);
        }
        return $type;
    }

    /**
     * What PromPHP's adapters return from collect(): here one Exposition
     * of the whole store, for RenderTextFormat::render().
     *
     * @return list<Exposition>
     */
    public function collect(): array
    {
        return [new Exposition($this->render(self::FORMAT_TEXT))];
    }

    /**
     * The store's counts and capacities (`shmetrics_stats`): families,
     * series_allocated, writers_live, writer_claims_total, overflows_total...
     *
     * @return array<string, int>
     */
    public function stats(): array
    {
        $ffi = $this->ffi();
        $s = $ffi->new('shmetrics_stats');
        $rc = $ffi->shmetrics_store_stats($this->store, FFI::addr($s));
        if ($rc !== Native::OK) {
            throw Native::exception($rc, "cannot read the statistics of {$this->path}");
        }
        $out = [];
        foreach ([
            'layout_version', 'families', 'families_capacity', 'series_allocated', 'series_capacity',
            'writers_capacity', 'writers_live', 'writers_dead', 'file_size', 'label_bytes_used',
            'label_bytes_capacity', 'cells_used', 'cells_capacity', 'writer_claims_total',
            'writer_reuses_total', 'writers_exhausted_total', 'overflows_total', 'lock_recoveries_total',
            'sketch_cells_used', 'sketch_cells_capacity', 'series_expired_total',
        ] as $field) {
            $out[$field] = $s->{$field};
        }
        return $out;
    }

    /**
     * Registers a family (or finds the same one, registered by any
     * process) and returns its token in the store handle's cache. The
     * library keeps the family for the life of the process under a key
     * made of the whole definition, so a later request that registers the
     * same definition makes one C call, and builds no C struct.
     *
     * @internal used by the metric classes
     * @param string $type "counter", "gauge", "histogram" or "summary", for messages
     * @param list<string> $labels
     * @param list<float|int>|null $buckets
     * @param list<float|int>|null $quantiles
     * @param array{float, float, int}|null $native native_bucket_factor, native_zero_threshold and
     *        native_max_buckets, as `shmetrics_family_desc` takes them
     * @param bool $exemplars keep OpenMetrics exemplars (counters, histograms with classic buckets)
     * @param int $ttlMs the series TTL in milliseconds, 0 for none
     */
    public function register(
        string $type,
        int $kind,
        string $name,
        string $help,
        array $labels,
        int $gaugeMode = 0,
        ?array $buckets = null,
        ?array $quantiles = null,
        int $maxAgeMs = 0,
        ?array $native = null,
        bool $exemplars = false,
        int $ttlMs = 0
    ): int {
        // Not $this->ffi(): a method call more per registration of a request.
        $ffi = $this->ffi ?? throw new \Error(self::class . ' was not constructed');
        $what = "$type $name";
        Checks::labelNames($what, $labels);
        // The whole definition; numbers as their bytes (pack), which is
        // much faster than formatting floats.
        $key = "$kind\0$name\0$help\0" . implode("\0", $labels) . "\0$gaugeMode\0$maxAgeMs\0$ttlMs\0"
            . ($exemplars ? 'e' : '') . "\0" . ($buckets === null ? 'n' : 'b' . self::pack($what, $buckets))
            . "\0" . ($quantiles === null ? 'n' : 'q' . self::pack($what, $quantiles))
            . "\0" . ($native === null ? 'n' : 'h' . pack('eeP', ...$native));
        $token = $ffi->shmetrics_family_cached($this->store, $key, strlen($key));
        if ($token !== 0) {
            return $token;
        }
        $d = $ffi->new('shmetrics_family_desc');
        [$d->name, $keepName] = Native::str($ffi, $name);
        [$d->help, $keepHelp] = Native::str($ffi, $help);
        [$names, $keepLabels] = Native::strs($ffi, array_values($labels));
        $d->label_names = $names === null ? null : $ffi->cast('const shmetrics_str *', $names);
        $d->label_count = count($labels);
        $d->kind = $kind;
        $d->gauge_mode = $gaugeMode;
        $b = $buckets === null ? null : Native::doubles($ffi, $buckets);
        $d->buckets = $b === null ? null : $ffi->cast('const double *', $b);
        $d->bucket_count = $buckets === null ? 0 : count($buckets);
        $q = $quantiles === null ? null : Native::doubles($ffi, $quantiles);
        $d->quantiles = $q === null ? null : $ffi->cast('const double *', $q);
        $d->quantile_count = $quantiles === null ? 0 : count($quantiles);
        $d->max_age_ms = $maxAgeMs;
        if ($native !== null) {
            $d->native = true;
            [$d->native_bucket_factor, $d->native_zero_threshold, $d->native_max_buckets] = $native;
        }
        $d->exemplars = $exemplars;
        $d->ttl_ms = $ttlMs;
        // PromPHP's names: the legacy character sets, checked by the store.
        $d->name_rules = $ffi->SHMETRICS_NAMES_LEGACY;
        // And the page PromPHP served (docs/ARCHITECTURE.md, "Exposition
        // hints"): a counter under the name it was given (`jobs` stays
        // `jobs`; the store keeps the flag for counters only), bounds and
        // quantiles as PHP writes floats (le="1", not le="1.0"), no
        // _created, the text format only. The extension sets the same.
        $d->name_as_given = 1;
        $d->hints = $ffi->SHMETRICS_HINT_SHORT_BOUNDS | $ffi->SHMETRICS_HINT_NO_CREATED
            | $ffi->SHMETRICS_HINT_TEXT_ONLY;
        $token = $ffi->new('uint32_t');
        $rc = $ffi->shmetrics_family_cache($this->store, $key, strlen($key), FFI::addr($d), FFI::addr($token));
        if ($rc !== Native::OK) {
            throw Native::exception($rc, "cannot register $what");
        }
        unset($keepName, $keepHelp, $keepLabels);
        return $token->cdata;
    }
}
