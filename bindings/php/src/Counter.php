<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Storage\Shmetrics;

/**
 * A counter: it only goes up. Exposed under the name it was registered
 * with, as PromPHP exposes it: `jobs` as `jobs`, `jobs_total` as
 * `jobs_total` (OpenMetrics, which wants `_total` on every counter
 * sample, writes `jobs_total` for both). Whole increments are exact
 * integers in the store; fractional ones are kept as floats, never
 * rounded to fixed point.
 *
 * Registered with `exemplars: true`, it keeps OpenMetrics exemplars:
 * inc() and incBy() then take one (`['trace_id' => '...']`), and the
 * OpenMetrics exposition shows the latest of each series over all
 * processes. PromPHP has no exemplars.
 */
final class Counter extends Collector
{
    public const TYPE = 'counter';

    private bool $exemplars;

    /**
     * @param list<string> $labels the label names
     * @param bool $exemplars keep exemplars (see the class comment); part of the definition
     * @param float|null $ttl seconds without an update after which a series expires (see Collector); null for never
     */
    public function __construct(
        Shmetrics $storage,
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        bool $exemplars = false,
        ?float $ttl = null
    ) {
        $this->exemplars = $exemplars;
        parent::__construct($storage, $namespace, $name, $help, $labels, $ttl);
    }

    public function getType(): string
    {
        return self::TYPE;
    }

    /**
     * Adds one.
     *
     * @param array<int, string|int|float> $labels the label values, in the order of the label names
     * @param array<string, string|int|float>|null $exemplar an exemplar of this increment, e.g.
     *        `['trace_id' => $traceId]`, for a counter registered with `exemplars: true`
     * @throws Exception\InvalidArgumentException the wrong number of label values, or one not UTF-8;
     *         an exemplar refused by the store (an invalid or repeated label name, more than 128
     *         characters, a counter without exemplars), in which case nothing is counted
     */
    public function inc(array $labels = [], ?array $exemplar = null): void
    {
        if ($exemplar !== null) {
            $this->updateWithExemplar(Native::OP_COUNTER_ADD, $labels, 1.0, $exemplar);
            return;
        }
        try {
            $this->update(Native::OP_COUNTER_ADD, $labels, 1.0);
        } catch (\Error $e) {
            throw $this->refused($e, $labels);
        }
    }

    /**
     * Adds $count, which must not be negative, NaN or INF.
     *
     * @param array<int, string|int|float> $labels
     * @param array<string, string|int|float>|null $exemplar an exemplar of this increment (see inc())
     * @throws Exception\InvalidArgumentException a negative, NaN or INF count, bad label values, or a
     *         refused exemplar; nothing is counted then
     */
    public function incBy(int|float $count, array $labels = [], ?array $exemplar = null): void
    {
        if ($exemplar !== null) {
            $this->updateWithExemplar(Native::OP_COUNTER_ADD, $labels, (float) $count, $exemplar);
            return;
        }
        try {
            $this->update(Native::OP_COUNTER_ADD, $labels, (float) $count);
        } catch (\Error $e) {
            throw $this->refused($e, $labels);
        }
    }

    protected function register(): int
    {
        return $this->storageAdapter->register(
            self::TYPE,
            1,
            $this->getName(),
            $this->getHelp(),
            $this->getLabelNames(),
            exemplars: $this->exemplars,
            ttlMs: $this->getTtlMs()
        );
    }
}
