<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Storage\Shmetrics;

/**
 * A histogram with classic buckets (fixed bounds), native (exponential)
 * buckets, or both. Exposed in the text formats with cumulative
 * `_bucket{le=...}` samples, `_count` (always equal to the `+Inf` bucket)
 * and `_sum`; native buckets only in the Prometheus protobuf format, which
 * the exporter serves when Prometheus asks for it.
 *
 * Registered with `exemplars: true` (and classic buckets), it keeps
 * OpenMetrics exemplars: observe() then takes one (`['trace_id' => '...']`)
 * for the bucket the value falls in, and the OpenMetrics exposition shows
 * the latest of each bucket over all processes. PromPHP has no exemplars.
 */
final class Histogram extends Collector
{
    public const TYPE = 'histogram';

    /**
     * The keys of the $native options, client_golang's
     * NativeHistogramBucketFactor, NativeHistogramZeroThreshold and
     * NativeHistogramMaxBucketNumber.
     */
    public const NATIVE_OPTIONS = ['bucketFactor', 'zeroThreshold', 'maxBucketNumber'];

    /** @var list<float>|null */
    private ?array $buckets;

    /** @var array{float, float, int}|null the native options as `shmetrics_family_desc` takes them */
    private ?array $native;

    private bool $exemplars;

    /**
     * @param list<string> $labels
     * @param list<float|int>|null $buckets strictly increasing upper bounds, without +Inf;
     *        null for getDefaultBuckets(), or for none with $native
     * @param array{bucketFactor?: float|int, zeroThreshold?: float|int, maxBucketNumber?: int}|null $native
     *        native buckets: `bucketFactor` (above 1, default 1.1), `zeroThreshold` (default 2^-128;
     *        the store raises it to 2^-64), `maxBucketNumber` (default 160, 0 for no limit).
     *        With $buckets null the histogram is native only.
     * @param bool $exemplars keep exemplars in the classic buckets (see the class comment); part of
     *        the definition
     * @param float|null $ttl seconds without an update after which a series expires (see Collector); null for never
     */
    public function __construct(
        Shmetrics $storage,
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        ?array $buckets = null,
        ?array $native = null,
        bool $exemplars = false,
        ?float $ttl = null
    ) {
        if ($buckets !== null && $buckets === []) {
            throw Checks::emptyBuckets($name);
        }
        $this->buckets = $buckets === null ? null : array_values($buckets);
        $this->native = $native === null ? null : Checks::nativeDesc($name, self::NATIVE_OPTIONS, $native);
        $this->exemplars = $exemplars;
        parent::__construct($storage, $namespace, $name, $help, $labels, $ttl);
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
        return Checks::exponentialBuckets($start, $growthFactor, $numberOfBuckets);
    }

    /**
     * Records an observation (not NaN).
     *
     * @param array<int, string|int|float> $labels
     * @param array<string, string|int|float>|null $exemplar an exemplar of this observation, e.g.
     *        `['trace_id' => $traceId]`, for a histogram registered with `exemplars: true`
     * @throws Exception\InvalidArgumentException NaN, bad label values, or an exemplar refused by the
     *         store (an invalid or repeated label name, more than 128 characters, a histogram
     *         without exemplars), in which case nothing is recorded
     */
    public function observe(float $value, array $labels = [], ?array $exemplar = null): void
    {
        if ($exemplar !== null) {
            $this->updateWithExemplar(Native::OP_OBSERVE, $labels, $value, $exemplar);
            return;
        }
        try {
            $this->update(Native::OP_OBSERVE, $labels, $value);
        } catch (\Error $e) {
            throw $this->refused($e, $labels);
        }
    }

    protected function register(): int
    {
        return $this->storageAdapter->register(
            self::TYPE,
            3,
            $this->getName(),
            $this->getHelp(),
            $this->getLabelNames(),
            0,
            $this->buckets ?? ($this->native === null ? self::getDefaultBuckets() : null),
            null,
            0,
            $this->native,
            $this->exemplars,
            $this->getTtlMs()
        );
    }
}
