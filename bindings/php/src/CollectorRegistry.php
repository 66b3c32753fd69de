<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Storage\Shmetrics;

/**
 * PromPHP's CollectorRegistry on a shmetrics store.
 *
 * Migrating from APCng is a change of namespace and of the storage:
 * `new CollectorRegistry(new Shmetrics('/dev/shm/myapp.metrics'))` or
 * `CollectorRegistry::getDefault()` (the store named by $SHMETRICS_STORE).
 *
 * register*() fails if this registry already has a metric of that name and
 * type; getOrRegister*() returns it. Every process that registers the same
 * definition shares the metric; a different definition under the same
 * name (another type, labels, buckets or gauge mode) is refused with a
 * MetricsRegistrationException that names both.
 */
class CollectorRegistry
{
    private static ?CollectorRegistry $default = null;

    private Shmetrics $storage;
    /** @var array<string, array<string, Collector>> by type, then "namespace:name" */
    private array $metrics = ['counter' => [], 'gauge' => [], 'histogram' => [], 'summary' => []];

    /**
     * @param Shmetrics|string|null $storage a store, or its path, or null for $SHMETRICS_STORE
     * @param bool $registerDefaultMetrics add PromPHP's php_info{version} gauge
     */
    public function __construct(Shmetrics|string|null $storage = null, bool $registerDefaultMetrics = true)
    {
        $this->storage = $storage instanceof Shmetrics ? $storage : new Shmetrics($storage);
        if ($registerDefaultMetrics) {
            $this->getOrRegisterGauge('', 'php_info', 'Information about the PHP environment.', ['version'])
                ->set(1, [PHP_VERSION]);
        }
    }

    /** The registry of the store named by $SHMETRICS_STORE (else /dev/shm/shmetrics). */
    public static function getDefault(): CollectorRegistry
    {
        return self::$default ??= new self();
    }

    public function getStorage(): Shmetrics
    {
        return $this->storage;
    }

    /**
     * The whole store, all processes merged: every metric any process
     * registered, not only this registry's.
     *
     * @return list<Exposition>
     */
    public function getMetricFamilySamples(): array
    {
        return $this->storage->collect();
    }

    /** Removes every metric from the store, in every process. */
    public function wipeStorage(): void
    {
        $this->storage->wipeStorage();
    }

    /**
     * @param list<string> $labels
     * @param bool $exemplars keep OpenMetrics exemplars, which inc() and incBy() then take; not in PromPHP
     * @param float|null $ttl series TTL in seconds, null for none: series no process updated for that long
     *        are no longer exported, and their space is reused; not in PromPHP (see Collector::__construct())
     */
    public function registerCounter(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        bool $exemplars = false,
        ?float $ttl = null
    ): Counter {
        $this->refuseTwice('counter', $namespace, $name);
        return $this->metrics['counter'][self::id($namespace, $name)]
            = new Counter($this->storage, $namespace, $name, $help, $labels, $exemplars, $ttl);
    }

    public function getCounter(string $namespace, string $name): Counter
    {
        $m = $this->find('counter', $namespace, $name);
        assert($m instanceof Counter);
        return $m;
    }

    /** @param list<string> $labels */
    public function getOrRegisterCounter(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        bool $exemplars = false,
        ?float $ttl = null
    ): Counter {
        $m = $this->metrics['counter'][self::id($namespace, $name)] ?? null;
        return $m instanceof Counter ? $m : $this->registerCounter($namespace, $name, $help, $labels, $exemplars, $ttl);
    }

    /**
     * @param list<string> $labels
     * @param string $mode how processes' values combine; "shared" (one value for all, as PromPHP) by default;
     *        see Gauge::MODES
     * @param float|null $ttl series TTL in seconds, null for none: series no process updated for that long
     *        are no longer exported, and their space is reused; not in PromPHP (see Collector::__construct())
     */
    public function registerGauge(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        string $mode = 'shared',
        ?float $ttl = null
    ): Gauge {
        $this->refuseTwice('gauge', $namespace, $name);
        return $this->metrics['gauge'][self::id($namespace, $name)]
            = new Gauge($this->storage, $namespace, $name, $help, $labels, $mode, $ttl);
    }

    public function getGauge(string $namespace, string $name): Gauge
    {
        $m = $this->find('gauge', $namespace, $name);
        assert($m instanceof Gauge);
        return $m;
    }

    /** @param list<string> $labels */
    public function getOrRegisterGauge(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        string $mode = 'shared',
        ?float $ttl = null
    ): Gauge {
        $m = $this->metrics['gauge'][self::id($namespace, $name)] ?? null;
        return $m instanceof Gauge ? $m : $this->registerGauge($namespace, $name, $help, $labels, $mode, $ttl);
    }

    /**
     * @param list<string> $labels
     * @param list<float|int>|null $buckets null for Histogram::getDefaultBuckets(), or for none with $native
     * @param array{bucketFactor?: float|int, zeroThreshold?: float|int, maxBucketNumber?: int}|null $native
     *        native (exponential) buckets, see Histogram::__construct(); not in PromPHP
     * @param bool $exemplars keep OpenMetrics exemplars in the classic buckets, which observe() then
     *        takes; not in PromPHP
     * @param float|null $ttl series TTL in seconds, null for none: series no process updated for that long
     *        are no longer exported, and their space is reused; not in PromPHP (see Collector::__construct())
     */
    public function registerHistogram(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        ?array $buckets = null,
        ?array $native = null,
        bool $exemplars = false,
        ?float $ttl = null
    ): Histogram {
        $this->refuseTwice('histogram', $namespace, $name);
        return $this->metrics['histogram'][self::id($namespace, $name)]
            = new Histogram($this->storage, $namespace, $name, $help, $labels, $buckets, $native, $exemplars, $ttl);
    }

    public function getHistogram(string $namespace, string $name): Histogram
    {
        $m = $this->find('histogram', $namespace, $name);
        assert($m instanceof Histogram);
        return $m;
    }

    /**
     * @param list<string> $labels
     * @param list<float|int>|null $buckets
     * @param array{bucketFactor?: float|int, zeroThreshold?: float|int, maxBucketNumber?: int}|null $native
     */
    public function getOrRegisterHistogram(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        ?array $buckets = null,
        ?array $native = null,
        bool $exemplars = false,
        ?float $ttl = null
    ): Histogram {
        $m = $this->metrics['histogram'][self::id($namespace, $name)] ?? null;
        return $m instanceof Histogram
            ? $m
            : $this->registerHistogram($namespace, $name, $help, $labels, $buckets, $native, $exemplars, $ttl);
    }

    /**
     * @param list<string> $labels
     * @param list<float>|null $quantiles estimated over the last $maxAgeSeconds (see Summary); null for Summary::getDefaultQuantiles()
     * @param float|null $ttl series TTL in seconds, null for none: series no process updated for that long
     *        are no longer exported, and their space is reused; not in PromPHP (see Collector::__construct())
     */
    public function registerSummary(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        int $maxAgeSeconds = 86400,
        ?array $quantiles = null,
        ?float $ttl = null
    ): Summary {
        $this->refuseTwice('summary', $namespace, $name);
        return $this->metrics['summary'][self::id($namespace, $name)]
            = new Summary($this->storage, $namespace, $name, $help, $labels, $maxAgeSeconds, $quantiles, $ttl);
    }

    public function getSummary(string $namespace, string $name): Summary
    {
        $m = $this->find('summary', $namespace, $name);
        assert($m instanceof Summary);
        return $m;
    }

    /**
     * @param list<string> $labels
     * @param list<float>|null $quantiles
     */
    public function getOrRegisterSummary(
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        int $maxAgeSeconds = 86400,
        ?array $quantiles = null,
        ?float $ttl = null
    ): Summary {
        $m = $this->metrics['summary'][self::id($namespace, $name)] ?? null;
        return $m instanceof Summary
            ? $m
            : $this->registerSummary($namespace, $name, $help, $labels, $maxAgeSeconds, $quantiles, $ttl);
    }

    private static function id(string $namespace, string $name): string
    {
        return $namespace . ':' . $name;
    }

    private function refuseTwice(string $type, string $namespace, string $name): void
    {
        if (isset($this->metrics[$type][self::id($namespace, $name)])) {
            throw Checks::registeredTwice($type, $namespace, $name);
        }
    }

    private function find(string $type, string $namespace, string $name): Collector
    {
        return $this->metrics[$type][self::id($namespace, $name)] ?? throw Checks::notFound($type, $namespace, $name);
    }
}
