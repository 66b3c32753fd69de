<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Exception\InvalidArgumentException;
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
            throw new InvalidArgumentException(
                "histogram $name: buckets must hold at least one bound; pass null for the default buckets"
            );
        }
        $this->buckets = $buckets === null ? null : array_values($buckets);
        $this->native = $native === null ? null : self::nativeDesc($name, $native);
        $this->exemplars = $exemplars;
        parent::__construct($storage, $namespace, $name, $help, $labels, $ttl);
    }

    /**
     * The $native options as the C ABI's fields: the factor, the zero
     * threshold (0 for the default) and the bucket limit (0 for the
     * default, UINT32_MAX for none). The store checks the values.
     *
     * @param array<mixed> $native
     * @return array{float, float, int}
     */
    private static function nativeDesc(string $name, array $native): array
    {
        foreach ($native as $key => $value) {
            if (!in_array($key, self::NATIVE_OPTIONS, true)) {
                throw new InvalidArgumentException(sprintf(
                    'histogram %s: unknown native option "%s"; the options are %s',
                    $name,
                    $key,
                    implode(', ', self::NATIVE_OPTIONS)
                ));
            }
            $ok = $key === 'maxBucketNumber'
                ? is_int($value) && $value >= 0 && $value <= 0xFFFFFFFF
                : is_int($value) || is_float($value);
            if (!$ok) {
                throw new InvalidArgumentException(sprintf(
                    'histogram %s: native option "%s" must be %s, got %s',
                    $name,
                    $key,
                    $key === 'maxBucketNumber' ? 'an integer from 0 to 2^32-1' : 'a number',
                    var_export($value, true)
                ));
            }
        }
        $max = $native['maxBucketNumber'] ?? null;
        return [
            // 0 leaves the store's default (1.1, schema 3).
            (float) ($native['bucketFactor'] ?? 0.0),
            (float) ($native['zeroThreshold'] ?? 0.0),
            $max === null ? 0 : ($max === 0 ? 0xFFFFFFFF : $max),
        ];
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
        $this->update(Native::OP_OBSERVE, $labels, $value);
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
