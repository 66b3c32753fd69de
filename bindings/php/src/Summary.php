<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Storage\Shmetrics;

/**
 * A summary. The store keeps its `_count` and `_sum`, merged over all
 * processes, and its quantiles over the last `maxAgeSeconds` (in 5
 * periods, as client_golang's age buckets): exact while each period of
 * each process saw at most 16 observations (kept as they were), else
 * each within 0.99% of the exact value, in fixed space: a sketch per
 * period and process, never a key per observation as APCng keeps.
 */
final class Summary extends Collector
{
    public const TYPE = 'summary';

    /** @var list<float> */
    private array $quantiles;
    private int $maxAgeSeconds;

    /**
     * @param list<string> $labels
     * @param int $maxAgeSeconds the window the quantiles cover
     * @param list<float>|null $quantiles each in [0, 1], increasing; null for getDefaultQuantiles()
     * @param float|null $ttl seconds without an update after which a series expires (see Collector); null for never
     */
    public function __construct(
        Shmetrics $storage,
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        int $maxAgeSeconds = 86400,
        ?array $quantiles = null,
        ?float $ttl = null
    ) {
        if ($maxAgeSeconds <= 0 || $maxAgeSeconds > Checks::MAX_AGE_SECONDS) {
            throw Checks::maxAge($name, $maxAgeSeconds);
        }
        $this->maxAgeSeconds = $maxAgeSeconds;
        $this->quantiles = array_values($quantiles ?? self::getDefaultQuantiles());
        parent::__construct($storage, $namespace, $name, $help, $labels, $ttl);
    }

    public function getType(): string
    {
        return self::TYPE;
    }

    /** @return list<float> */
    public static function getDefaultQuantiles(): array
    {
        return [0.01, 0.05, 0.5, 0.95, 0.99];
    }

    /**
     * Records an observation (not NaN).
     *
     * @param array<int, string|int|float> $labels
     */
    public function observe(float $value, array $labels = []): void
    {
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
            4,
            $this->getName(),
            $this->getHelp(),
            $this->getLabelNames(),
            0,
            null,
            $this->quantiles,
            $this->maxAgeSeconds * 1000,
            ttlMs: $this->getTtlMs()
        );
    }
}
