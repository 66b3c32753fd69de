<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Storage\Shmetrics;

/**
 * A gauge: a value that goes up and down.
 *
 * How the values of the processes combine is the gauge's mode. The
 * default, "shared", keeps one value that every process sets and adds to,
 * as PromPHP's APCu storage does. The other modes keep one value per
 * process and combine them as prometheus_client's multiprocess modes do:
 * "all" and "liveall" (one series per process, labelled pid), "sum",
 * "livesum", "max", "livemax", "min", "livemin", "mostrecent",
 * "livemostrecent", and "liveaverage" (the mean); the "live" modes count
 * only processes that are alive.
 */
final class Gauge extends Collector
{
    public const TYPE = 'gauge';

    /** The modes, as the C ABI numbers them (enum shmetrics_gauge_mode). */
    public const MODES = [
        'all' => 1, 'liveall' => 2, 'sum' => 3, 'livesum' => 4, 'max' => 5, 'livemax' => 6,
        'min' => 7, 'livemin' => 8, 'mostrecent' => 9, 'livemostrecent' => 10, 'shared' => 11,
        'liveaverage' => 12,
    ];

    private string $mode;

    /**
     * @param list<string> $labels
     * @param string $mode one of self::MODES
     * @param float|null $ttl seconds without an update after which a series expires (see Collector); null for never
     */
    public function __construct(
        Shmetrics $storage,
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        string $mode = 'shared',
        ?float $ttl = null
    ) {
        if (!isset(self::MODES[$mode])) {
            throw Checks::unknownGaugeMode($mode, self::MODES);
        }
        $this->mode = $mode;
        parent::__construct($storage, $namespace, $name, $help, $labels, $ttl);
    }

    public function getType(): string
    {
        return self::TYPE;
    }

    /** The mode the gauge was registered with. */
    public function getMode(): string
    {
        return $this->mode;
    }

    /**
     * Sets the value (not NaN).
     *
     * @param array<int, string|int|float> $labels
     */
    public function set(float $value, array $labels = []): void
    {
        try {
            $this->update(Native::OP_GAUGE_SET, $labels, $value);
        } catch (\Error $e) {
            throw $this->refused($e, $labels);
        }
    }

    /** @param array<int, string|int|float> $labels */
    public function inc(array $labels = []): void
    {
        $this->incBy(1, $labels);
    }

    /**
     * Adds $value (negative to decrease; not NaN).
     *
     * @param array<int, string|int|float> $labels
     */
    public function incBy(int|float $value, array $labels = []): void
    {
        try {
            $this->update(Native::OP_GAUGE_ADD, $labels, (float) $value);
        } catch (\Error $e) {
            throw $this->refused($e, $labels);
        }
    }

    /** @param array<int, string|int|float> $labels */
    public function dec(array $labels = []): void
    {
        $this->incBy(-1, $labels);
    }

    /** @param array<int, string|int|float> $labels */
    public function decBy(int|float $value, array $labels = []): void
    {
        $this->incBy(-$value, $labels);
    }

    /**
     * Sets the value to the current Unix time in seconds.
     *
     * @param array<int, string|int|float> $labels
     */
    public function setToCurrentTime(array $labels = []): void
    {
        try {
            $this->update(Native::OP_GAUGE_SET_TO_CURRENT_TIME, $labels, 0.0);
        } catch (\Error $e) {
            throw $this->refused($e, $labels);
        }
    }

    protected function register(): int
    {
        return $this->storageAdapter->register(
            self::TYPE,
            2,
            $this->getName(),
            $this->getHelp(),
            $this->getLabelNames(),
            self::MODES[$this->mode],
            ttlMs: $this->getTtlMs()
        );
    }
}
