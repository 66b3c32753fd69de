<?php

declare(strict_types=1);

namespace Shmetrics;

use FFI\CData;

/**
 * A counter: it only goes up. Exposed as `<name>_total` (a trailing
 * `_total` in the name is not doubled). Whole increments are exact
 * integers in the store; fractional ones are kept as floats, never
 * rounded to fixed point.
 */
final class Counter extends Collector
{
    public const TYPE = 'counter';

    public function getType(): string
    {
        return self::TYPE;
    }

    /**
     * Adds one.
     *
     * @param array<int, string|int|float> $labels the label values, in the order of the label names
     * @throws Exception\InvalidArgumentException the wrong number of label values, or one not UTF-8
     */
    public function inc(array $labels = []): void
    {
        if (\count($labels) !== $this->labelCount) {
            $this->lookup($labels);
        }
        $s = $this->series[$labels ? \implode("\xff", $labels) : ''] ?? $this->lookup($labels);
        $rc = $this->ffi->shmetrics_counter_inc($this->st, $s);
        if ($rc !== 0) {
            $this->failed($rc, $labels, 'shmetrics_counter_inc', []);
        }
    }

    /**
     * Adds $count, which must not be negative or NaN.
     *
     * @param array<int, string|int|float> $labels
     * @throws Exception\InvalidArgumentException a negative or NaN count, or bad label values
     */
    public function incBy(int|float $count, array $labels = []): void
    {
        if (\count($labels) !== $this->labelCount) {
            $this->lookup($labels);
        }
        $s = $this->series[$labels ? \implode("\xff", $labels) : ''] ?? $this->lookup($labels);
        $rc = $this->ffi->shmetrics_counter_add($this->st, $s, $count);
        if ($rc !== 0) {
            $this->failed($rc, $labels, 'shmetrics_counter_add', [(float) $count]);
        }
    }

    protected function register(): CData
    {
        return $this->storageAdapter->register($this->what(), 1, $this->getName(), $this->getHelp(), $this->getLabelNames());
    }
}
