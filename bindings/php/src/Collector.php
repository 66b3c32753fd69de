<?php

declare(strict_types=1);

namespace Shmetrics;

use FFI;
use FFI\CData;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Storage\Shmetrics;

/**
 * What every metric shares: its family in the store, found through the
 * library's per-process cache (`shmetrics_family_cached`), and its
 * updates, each one C call with plain arguments (`shmetrics_update`): the
 * family's token, the label values joined by "\xff" and the value. The
 * library caches each series by its label values for the life of the
 * worker process, so neither the family nor the series is looked up
 * again in later requests.
 *
 * The name is PromPHP's: "{$namespace}_{$name}", or $name when the
 * namespace is empty. Names, label names and values are checked by the
 * store, not here: errors carry its message.
 */
abstract class Collector
{
    /** @internal */
    protected FFI $ffi;
    /** @internal the `shmetrics_store *` */
    protected CData $st;
    /** @internal the family's token in the store handle's cache */
    protected int $family;
    /** @internal */
    protected int $labelCount;
    protected Shmetrics $storageAdapter;
    /** @var array<string, true> joined label values this object checked already */
    private array $checked = [];
    private string $name;
    private string $help;
    /** @var list<string> */
    private array $labels;
    /** the `ttl_ms` of the family's description; 0 = none */
    private int $ttlMs;

    /**
     * @param list<string> $labels the label names
     * @param float|null $ttl series TTL in seconds, null for none: a series that no process updated
     *        for $ttl seconds is no longer exported, and its space goes to the family's next new
     *        series; an update of the same label values later starts it again from zero. The store
     *        takes 0.1 s to about 49 days. Part of the definition.
     * @throws InvalidArgumentException an invalid name or label name, or TTL
     * @throws Exception\MetricsRegistrationException the store has this name with another definition
     */
    public function __construct(
        Shmetrics $storage,
        string $namespace,
        string $name,
        string $help,
        array $labels = [],
        ?float $ttl = null
    ) {
        $this->storageAdapter = $storage;
        $this->ffi = $storage->ffi;
        $this->st = $storage->store;
        $this->name = ($namespace !== '' ? $namespace . '_' : '') . $name;
        $this->help = $help;
        $this->labels = array_values($labels);
        $this->labelCount = count($labels);
        $this->ttlMs = Checks::ttlMs($this->what(), $ttl);
        $this->family = $this->register();
    }

    /** The series TTL in seconds the metric was registered with, or null. */
    public function getTtl(): ?float
    {
        return $this->ttlMs === 0 ? null : $this->ttlMs / 1000;
    }

    /** "counter", "gauge", "histogram" or "summary". */
    abstract public function getType(): string;

    /** Registers the family (or finds it in the process's cache) and returns its token. */
    abstract protected function register(): int;

    public function getName(): string
    {
        return $this->name;
    }

    public function getHelp(): string
    {
        return $this->help;
    }

    /** @return list<string> */
    public function getLabelNames(): array
    {
        return $this->labels;
    }

    /** A key unique to the name and label names, as PromPHP's. */
    public function getKey(): string
    {
        return sha1($this->name . serialize($this->labels));
    }

    /**
     * Makes update $op (a Native::OP_* code) of $value on the series of
     * these label values. The library finds the series in its cache (or
     * looks it up, or creates it, once per process); a series that does
     * not fit in the store is updated as the family's overflow series
     * (exported with shmetrics_overflow="true"), so the update is not
     * lost. A series that expired, or a store wiped by any process, is
     * looked up again (the family registered again) by the library.
     *
     * @internal
     * @param array<mixed> $labels
     */
    protected function update(int $op, array $labels, float $value): void
    {
        // A label value that cannot be a string throws Error here: the
        // public methods catch it (refused()), not this one, whose
        // try/catch would cost 100 instructions per update.
        $key = $labels ? \implode("\xff", $labels) : '';
        if (\count($labels) !== $this->labelCount || !isset($this->checked[$key])) {
            $this->check($labels);
        }
        $rc = $this->ffi->shmetrics_update($this->st, $this->family, $op, $key, \strlen($key), $value);
        if ($rc !== 0) {
            throw Checks::updateFailed($rc, $this->what(), $this->labels, $labels);
        }
    }

    /**
     * What an update that threw $e throws: the binding's refusal of the
     * label values when one cannot be a string (implode() threw), else $e.
     *
     * @internal
     * @param array<mixed> $labels
     */
    protected function refused(\Error $e, array $labels): \Throwable
    {
        try {
            $this->check($labels);
        } catch (Exception\ShmetricsException $refusal) {
            return $refusal;
        }
        return $e;
    }

    /**
     * Checks the label values (Checks::labelValues()), and remembers them
     * as checked.
     *
     * @param array<mixed> $labels
     */
    private function check(array $labels): void
    {
        $this->checked[Checks::labelValues($this->what(), $this->labels, $labels)] = true;
    }

    /**
     * An update with an exemplar: $op (Native::OP_COUNTER_ADD or
     * Native::OP_OBSERVE) of $value on the series of $labels, with the
     * exemplar's label names and values (`['trace_id' => '...']`). The
     * store checks them; a refused exemplar refuses the update too.
     *
     * @internal
     * @param array<mixed> $labels the series' label values
     * @param array<mixed> $exemplar
     */
    protected function updateWithExemplar(int $op, array $labels, float $value, array $exemplar): void
    {
        try {
            $key = $labels ? \implode("\xff", $labels) : '';
        } catch (\Error $e) {
            $this->check($labels); // as in update()
            throw $e;
        }
        if (\count($labels) !== $this->labelCount || !isset($this->checked[$key])) {
            $this->check($labels);
        }
        [$names, $values] = Checks::exemplar($this->what(), $exemplar);
        [$n, $keepNames] = Native::strs($this->ffi, $names);
        [$vs, $keepValues] = Native::strs($this->ffi, $values);
        $rc = $this->ffi->shmetrics_update_exemplar(
            $this->st,
            $this->family,
            $op,
            $key,
            \strlen($key),
            $value,
            $n === null ? null : FFI::addr($n[0]),
            $vs === null ? null : FFI::addr($vs[0]),
            count($names)
        );
        unset($keepNames, $keepValues);
        if ($rc !== Native::OK) {
            throw Checks::updateFailed($rc, $this->what(), $this->labels, $labels, true);
        }
    }

    /** "counter app_requests", for messages. */
    protected function what(): string
    {
        return $this->getType() . ' ' . $this->name;
    }

    /** @internal the `ttl_ms` to register the family with */
    protected function getTtlMs(): int
    {
        return $this->ttlMs;
    }
}
