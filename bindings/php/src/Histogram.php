<?php

declare(strict_types=1);

namespace Shmetrics;

use FFI\CData;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Storage\Shmetrics;

/**
 * A classic histogram with fixed bucket bounds. Exposed with cumulative
 * `_bucket{le=...}` samples, `_count` (always equal to the `+Inf` bucket)
 * and `_sum`.
 */
final class Histogram extends Collector
{
    public const TYPE = 'histogram';

    /** @var list<float>|null */
    private ?array $buckets;

    /**
     * @param list<string> $labels
     * @param list<float|int>|null $buckets strictly increasing upper bounds, without +Inf;
     *        null for getDefaultBuckets()
     */
    public function __construct(Shmetrics $storage, string $namespace, string $name, string $help, array $labels = [], ?array $buckets = null)
    {
        if ($buckets !== null && $buckets === []) {
            throw new InvalidArgumentException(
                "histogram $name: buckets must hold at least one bound; pass null for the default buckets"
            );
        }
        $this->buckets = $buckets === null ? null : array_values($buckets);
        parent::__construct($storage, $namespace, $name, $help, $labels);
    }

    public function getType(): string
    {
        return self::TYPE;
    }

    /**
     * PromPHP's default bucket bounds, suited to request latencies in
     * seconds; used when a histogram is registered with null buckets, so
     * that migrated histograms keep their series. (The store's own default
     * is client_golang's shorter list.)
     *
     * @return list<float>
     */
    public static function getDefaultBuckets(): array
    {
        return [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];
    }

    /**
     * $numberOfBuckets bounds: $start, then each $growthFactor times the one before.
     *
     * @return list<float>
     */
    public static function exponentialBuckets(float $start, float $growthFactor, int $numberOfBuckets): array
    {
        if ($numberOfBuckets < 1) {
            throw new InvalidArgumentException("the number of buckets must be at least 1, got $numberOfBuckets");
        }
        if (!($start > 0)) {
            throw new InvalidArgumentException("the first bucket bound must be above 0, got $start");
        }
        if (!($growthFactor > 1)) {
            throw new InvalidArgumentException("the growth factor must be above 1, got $growthFactor");
        }
        $buckets = [];
        for ($i = 0; $i < $numberOfBuckets; $i++) {
            $buckets[] = $start;
            $start *= $growthFactor;
        }
        return $buckets;
    }

    /**
     * Records an observation (not NaN).
     *
     * @param array<int, string|int|float> $labels
     */
    public function observe(float $value, array $labels = []): void
    {
        if (\count($labels) !== $this->labelCount) {
            $this->lookup($labels);
        }
        $s = $this->series[$labels ? \implode("\xff", $labels) : ''] ?? $this->lookup($labels);
        $rc = $this->ffi->shmetrics_observe($this->st, $s, $value);
        if ($rc !== 0) {
            $this->failed($rc, $labels, 'shmetrics_observe', [$value]);
        }
    }

    protected function register(): CData
    {
        return $this->storageAdapter->register(
            $this->what(),
            3,
            $this->getName(),
            $this->getHelp(),
            $this->getLabelNames(),
            0,
            $this->buckets ?? self::getDefaultBuckets()
        );
    }
}
