<?php

declare(strict_types=1);

namespace Shmetrics\PromPHP;

use Prometheus\Exception\MetricsRegistrationException as PromMetricsRegistrationException;
use Prometheus\Exception\StorageException as PromStorageException;
use Prometheus\MetricFamilySamples;
use Prometheus\Storage\Adapter;
use Shmetrics\Collector;
use Shmetrics\Counter;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Exception\ShmetricsException;
use Shmetrics\Exception\StorageException;
use Shmetrics\Gauge;
use Shmetrics\Histogram;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Summary;

/**
 * PromPHP's storage interface (`Prometheus\Storage\Adapter`, from the
 * user's own `promphp/prometheus_client_php`) on a shmetrics store: the
 * migration from APCu is `new APCng()` → `new ShmetricsAdapter()`, and
 * every `Prometheus\CollectorRegistry`, `Counter`, `Gauge`, `Histogram`
 * and `Summary` of the application stays as it is.
 *
 * Updates go through this package's own metric classes (one per metric
 * name, kept for the adapter's life), so they cost what the native API
 * costs after PromPHP's own checks, and share its per-process store
 * handle. collect() builds PromPHP's sample objects from the series
 * the library writes for the whole store in one call (Samples), not from
 * an exposition text: it covers every metric in the store,
 * registered by any process or by the native API. docs/php.md lists what differs from APCng.
 */
final class ShmetricsAdapter implements Adapter
{
    private Shmetrics $storage;

    /** @var array<string, array{0: Collector, 1: array<mixed>}> by type and name: the metric and its definition */
    private array $metrics = [];

    /**
     * @param Shmetrics|string|null $storage a store, or its path, or null for $SHMETRICS_STORE
     *        (else /dev/shm/shmetrics)
     * @param array<string, bool|int> $options the store's options when it is created, as for
     *        Shmetrics\Storage\Shmetrics
     */
    public function __construct(Shmetrics|string|null $storage = null, array $options = [])
    {
        $this->storage = $storage instanceof Shmetrics ? $storage : new Shmetrics($storage, $options);
    }

    /** The store the adapter writes to. */
    public function getStorage(): Shmetrics
    {
        return $this->storage;
    }

    /** @param array<string, mixed> $data */
    public function updateCounter(array $data): void
    {
        if ($data['command'] === Adapter::COMMAND_SET) {
            throw new \InvalidArgumentException(
                "counter {$data['name']}: a counter only goes up; COMMAND_SET is not supported"
            );
        }
        $counter = $this->metric(Counter::TYPE, $data, [$data['labelNames']]);
        assert($counter instanceof Counter);
        try {
            $counter->incBy($data['value'], $data['labelValues']);
        } catch (ShmetricsException $e) {
            throw self::translate($e);
        }
    }

    /** @param array<string, mixed> $data */
    public function updateGauge(array $data): void
    {
        $gauge = $this->metric(Gauge::TYPE, $data, [$data['labelNames']]);
        assert($gauge instanceof Gauge);
        try {
            if ($data['command'] === Adapter::COMMAND_SET) {
                $gauge->set($data['value'], $data['labelValues']);
            } else {
                $gauge->incBy($data['value'], $data['labelValues']);
            }
        } catch (ShmetricsException $e) {
            throw self::translate($e);
        }
    }

    /** @param array<string, mixed> $data */
    public function updateHistogram(array $data): void
    {
        $histogram = $this->metric(Histogram::TYPE, $data, [$data['labelNames'], $data['buckets']]);
        assert($histogram instanceof Histogram);
        try {
            $histogram->observe($data['value'], $data['labelValues']);
        } catch (ShmetricsException $e) {
            throw self::translate($e);
        }
    }

    /** @param array<string, mixed> $data */
    public function updateSummary(array $data): void
    {
        $summary = $this->metric(Summary::TYPE, $data, [$data['labelNames'], $data['maxAgeSeconds'], $data['quantiles']]);
        assert($summary instanceof Summary);
        try {
            $summary->observe($data['value'], $data['labelValues']);
        } catch (ShmetricsException $e) {
            throw self::translate($e);
        }
    }

    /**
     * Every metric of the store with at least one series, as PromPHP's
     * sample objects. With $sortMetrics, the series of each metric are
     * sorted by their label values, as PromPHP's adapters sort them;
     * otherwise they come in the order they were created.
     *
     * @return MetricFamilySamples[]
     */
    public function collect(bool $sortMetrics = true): array
    {
        try {
            return Samples::collect($this->storage, $sortMetrics);
        } catch (ShmetricsException $e) {
            throw self::translate($e);
        }
    }

    /** Removes every metric from the store, in every process. */
    public function wipeStorage(): void
    {
        $this->metrics = [];
        try {
            $this->storage->wipeStorage();
        } catch (ShmetricsException $e) {
            throw self::translate($e);
        }
    }

    /**
     * The metric object for $data, made (and registered in the store) on
     * its first update. $definition is what else must match: a name
     * updated with other label names, buckets or quantiles gets a new
     * object, which the store refuses if the definitions conflict.
     *
     * @param string $type the update's type (that of its method, whatever $data['type'] says)
     * @param array<string, mixed> $data
     * @param array<mixed> $definition
     */
    private function metric(string $type, array $data, array $definition): Collector
    {
        $key = $type . ':' . $data['name'];
        $known = $this->metrics[$key] ?? null;
        if ($known !== null && $known[1] === $definition) {
            return $known[0];
        }
        try {
            $metric = match ($type) {
                Counter::TYPE => new Counter($this->storage, '', $data['name'], $data['help'], $data['labelNames']),
                Gauge::TYPE => new Gauge($this->storage, '', $data['name'], $data['help'], $data['labelNames']),
                Histogram::TYPE => new Histogram(
                    $this->storage,
                    '',
                    $data['name'],
                    $data['help'],
                    $data['labelNames'],
                    $data['buckets']
                ),
                Summary::TYPE => new Summary(
                    $this->storage,
                    '',
                    $data['name'],
                    $data['help'],
                    $data['labelNames'],
                    $data['maxAgeSeconds'],
                    $data['quantiles']
                ),
            };
        } catch (ShmetricsException $e) {
            throw self::translate($e);
        }
        $this->metrics[$key] = [$metric, $definition];
        return $metric;
    }

    /**
     * The store's refusal $e as PromPHP's exception: a definition that
     * conflicts with the store's as MetricsRegistrationException, a store
     * that cannot be used as StorageException. Invalid names, labels and
     * values stay InvalidArgumentException (a subclass of PHP's), as
     * PromPHP throws.
     */
    private static function translate(ShmetricsException $e): \Throwable
    {
        return match (true) {
            $e instanceof MetricsRegistrationException
                => new PromMetricsRegistrationException($e->getMessage(), $e->getCode(), $e),
            $e instanceof StorageException => new PromStorageException($e->getMessage(), $e->getCode(), $e),
            default => $e,
        };
    }
}
