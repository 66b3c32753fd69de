<?php

/**
 * The PHP-visible API of the shmetrics extension: every function, class,
 * constant, property and method it registers. PHP's build/gen_stub.php
 * makes shmetrics_arginfo.h from this file (bindings/php/ext/gen-arginfo.sh):
 * edit this file, never the header. The classes are those of the package's
 * src/, whose PHP implementations stay the fallback when the extension is
 * not loaded; their docblocks there say what each method does.
 *
 * @generate-class-entries
 */

namespace Shmetrics\Ext {
    /**
     * A persistent store handle, made by open(); shmetrics_store.c.
     * @strict-properties
     * @not-serializable
     */
    final class Store
    {
    }

    /** The process's handle of the store at $path, opened if needed. */
    function open(string $path, array $options): Store {}

    /** The result code of shmetrics_store_wipe. */
    function wipe(Store $store): int {}

    /**
     * The exposition in $format into $out; the result code.
     * @param string $out
     */
    function render(Store $store, int $format, &$out): int {}

    function content_type(int $format): ?string {}

    /**
     * The store's statistics into $out; the result code.
     * @param array $out
     */
    function stats(Store $store, &$out): int {}

    /**
     * The arrays of Shmetrics\Snapshot::take() into $out; the result code.
     * @param array $out
     */
    function snapshot(Store $store, &$out): int {}

    /** The library's message for this thread's last failed call. */
    function last_error(): string {}

    /** The library's version. */
    function version(): string {}
}

namespace Shmetrics\Storage {
    /**
     * shmetrics_storage.c.
     * @not-serializable
     */
    final class Shmetrics
    {
        /** @var int */
        public const FORMAT_TEXT = 0;
        /** @var int */
        public const FORMAT_OPENMETRICS = 1;

        /**
         * Always null here (the FFI class's FFI instance).
         * @var null
         */
        public $ffi = null;
        /**
         * The Shmetrics\Ext\Store, once constructed.
         * @var \Shmetrics\Ext\Store|null
         */
        public $store = null;

        public function __construct(?string $path = null, array $options = []) {}

        public function path(): string {}

        public function wipeStorage(): void {}

        public function render(int $format = Shmetrics::FORMAT_TEXT): string {}

        public function contentType(int $format = Shmetrics::FORMAT_TEXT): string {}

        public function collect(): array {}

        public function stats(): array {}
    }
}

namespace Shmetrics {
    /**
     * The metrics' common methods; shmetrics_collector.c (their C side: shmetrics_metric.c).
     * @strict-properties
     * @not-serializable
     */
    abstract class Collector
    {
        public function getName(): string {}

        public function getHelp(): string {}

        public function getType(): string {}

        public function getLabelNames(): array {}

        public function getKey(): string {}

        public function getTtl(): ?float {}
    }

    /**
     * @strict-properties
     * @not-serializable
     */
    final class Counter extends Collector
    {
        /** @var string */
        public const TYPE = "counter";

        public function __construct(
            \Shmetrics\Storage\Shmetrics $storage, string $namespace, string $name, string $help, array $labels = [],
            bool $exemplars = false, ?float $ttl = null
        ) {}

        public function inc(array $labels = [], ?array $exemplar = null): void {}

        public function incBy(int|float $count, array $labels = [], ?array $exemplar = null): void {}
    }

    /**
     * Its constant MODES (mode name => SHMETRICS_GAUGE_* number), an
     * array, is declared by shm_collector_minit(), as gen_stub.php makes no
     * array constants.
     * @strict-properties
     * @not-serializable
     */
    final class Gauge extends Collector
    {
        /** @var string */
        public const TYPE = "gauge";

        public function __construct(
            \Shmetrics\Storage\Shmetrics $storage, string $namespace, string $name, string $help, array $labels = [],
            string $mode = "shared", ?float $ttl = null
        ) {}

        public function getMode(): string {}

        public function set(float $value, array $labels = []): void {}

        public function inc(array $labels = []): void {}

        public function incBy(int|float $value, array $labels = []): void {}

        public function dec(array $labels = []): void {}

        public function decBy(int|float $value, array $labels = []): void {}

        public function setToCurrentTime(array $labels = []): void {}
    }

    /**
     * Its constant NATIVE_OPTIONS (the keys of $native, a list) is
     * declared by shm_collector_minit(), as MODES is.
     * @strict-properties
     * @not-serializable
     */
    final class Histogram extends Collector
    {
        /** @var string */
        public const TYPE = "histogram";

        public function __construct(
            \Shmetrics\Storage\Shmetrics $storage, string $namespace, string $name, string $help, array $labels = [],
            ?array $buckets = null, ?array $native = null, bool $exemplars = false, ?float $ttl = null
        ) {}

        public static function getDefaultBuckets(): array {}

        public static function exponentialBuckets(float $start, float $growthFactor, int $numberOfBuckets): array {}

        public function observe(float $value, array $labels = [], ?array $exemplar = null): void {}
    }

    /**
     * @strict-properties
     * @not-serializable
     */
    final class Summary extends Collector
    {
        /** @var string */
        public const TYPE = "summary";

        public function __construct(
            \Shmetrics\Storage\Shmetrics $storage, string $namespace, string $name, string $help, array $labels = [],
            int $maxAgeSeconds = 86400, ?array $quantiles = null, ?float $ttl = null
        ) {}

        public static function getDefaultQuantiles(): array {}

        public function observe(float $value, array $labels = []): void {}
    }

    /**
     * shmetrics_registry.c.
     * @strict-properties
     * @not-serializable
     */
    class CollectorRegistry
    {
        public function __construct(
            \Shmetrics\Storage\Shmetrics|string|null $storage = null, bool $registerDefaultMetrics = true
        ) {}

        public static function getDefault(): CollectorRegistry {}

        public function getStorage(): \Shmetrics\Storage\Shmetrics {}

        public function getMetricFamilySamples(): array {}

        public function wipeStorage(): void {}

        public function registerCounter(
            string $namespace, string $name, string $help, array $labels = [], bool $exemplars = false,
            ?float $ttl = null
        ): Counter {}

        public function getCounter(string $namespace, string $name): Counter {}

        public function getOrRegisterCounter(
            string $namespace, string $name, string $help, array $labels = [], bool $exemplars = false,
            ?float $ttl = null
        ): Counter {}

        public function registerGauge(
            string $namespace, string $name, string $help, array $labels = [], string $mode = "shared",
            ?float $ttl = null
        ): Gauge {}

        public function getGauge(string $namespace, string $name): Gauge {}

        public function getOrRegisterGauge(
            string $namespace, string $name, string $help, array $labels = [], string $mode = "shared",
            ?float $ttl = null
        ): Gauge {}

        public function registerHistogram(
            string $namespace, string $name, string $help, array $labels = [], ?array $buckets = null,
            ?array $native = null, bool $exemplars = false, ?float $ttl = null
        ): Histogram {}

        public function getHistogram(string $namespace, string $name): Histogram {}

        public function getOrRegisterHistogram(
            string $namespace, string $name, string $help, array $labels = [], ?array $buckets = null,
            ?array $native = null, bool $exemplars = false, ?float $ttl = null
        ): Histogram {}

        public function registerSummary(
            string $namespace, string $name, string $help, array $labels = [], int $maxAgeSeconds = 86400,
            ?array $quantiles = null, ?float $ttl = null
        ): Summary {}

        public function getSummary(string $namespace, string $name): Summary {}

        public function getOrRegisterSummary(
            string $namespace, string $name, string $help, array $labels = [], int $maxAgeSeconds = 86400,
            ?array $quantiles = null, ?float $ttl = null
        ): Summary {}
    }
}
