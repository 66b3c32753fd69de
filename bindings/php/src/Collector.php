<?php

declare(strict_types=1);

namespace Shmetrics;

use FFI;
use FFI\CData;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Storage\Shmetrics;

/**
 * What every metric shares: its family in the store, and the handles of
 * its series, cached per tuple of label values so that a repeated update
 * costs one C call and no lookup.
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
    /** @internal `const shmetrics_series *` by label values joined with "\xff" */
    protected array $series = [];
    /** @internal */
    protected int $labelCount;
    protected Shmetrics $storageAdapter;
    private CData $family;
    /** @var array<string, CData> the `shmetrics_series` the pointers in $series point to */
    private array $owners = [];
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
        $this->ttlMs = $this->ttlMs($ttl);
        $this->family = $this->register();
    }

    /** The series TTL in seconds the metric was registered with, or null. */
    public function getTtl(): ?float
    {
        return $this->ttlMs === 0 ? null : $this->ttlMs / 1000;
    }

    /** "counter", "gauge", "histogram" or "summary". */
    abstract public function getType(): string;

    /** Registers the family (again, after a wipe) and returns its handle. */
    abstract protected function register(): CData;

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
     * The series of these label values: looked up (or created) in the
     * store once, then cached. A series that does not fit in the store
     * resolves to the family's overflow series (exported with
     * shmetrics_overflow="true"), so the update is not lost.
     *
     * @internal the slow path of every update
     * @param array<mixed> $labels
     */
    protected function lookup(array $labels): CData
    {
        if (count($labels) !== $this->labelCount) {
            throw new InvalidArgumentException(sprintf(
                '%s takes %d label value%s (%s), got %d: %s',
                $this->what(),
                $this->labelCount,
                $this->labelCount === 1 ? '' : 's',
                implode(', ', $this->labels),
                count($labels),
                json_encode(array_values($labels), JSON_INVALID_UTF8_SUBSTITUTE | JSON_UNESCAPED_SLASHES)
            ));
        }
        $values = [];
        foreach ($labels as $v) {
            if (is_array($v) || (is_object($v) && !$v instanceof \Stringable)) {
                throw new InvalidArgumentException(sprintf(
                    '%s: label values must be strings or numbers, got %s',
                    $this->what(),
                    get_debug_type($v)
                ));
            }
            $values[] = (string) $v;
        }
        $key = implode("\xff", $values);
        for ($attempt = 0;; $attempt++) {
            [$arr, $keep] = Native::strs($this->ffi, $values);
            $s = $this->ffi->new('shmetrics_series');
            $rc = $this->ffi->shmetrics_series_get(
                $this->st,
                FFI::addr($this->family),
                $arr === null ? null : FFI::addr($arr[0]),
                count($values),
                FFI::addr($s)
            );
            unset($keep);
            if ($rc === Native::STALE_HANDLE && $attempt === 0) {
                $this->reattach();
                continue;
            }
            if ($rc !== Native::OK && $rc !== Native::OVERFLOW) {
                throw Native::exception($rc, $this->what($values));
            }
            $this->owners[$key] = $s;
            return $this->series[$key] = FFI::addr($s);
        }
    }

    /**
     * Handles a failed update. A stale handle is that of a series that
     * expired (its family has a TTL) or of a store wiped by any process:
     * the series is looked up again (after a wipe, lookup() registers the
     * family again too), and the update applied once more; an expired
     * series comes back from zero. Any other failure, or a second one, is
     * thrown.
     *
     * @internal
     * @param array<mixed> $labels
     * @param list<float> $args the update's arguments after the series
     */
    protected function failed(int $rc, array $labels, string $function, array $args): void
    {
        if ($rc === Native::STALE_HANDLE) {
            $key = implode("\xff", array_map('strval', array_values($labels)));
            unset($this->series[$key], $this->owners[$key]);
            $rc = $this->ffi->{$function}($this->st, $this->lookup($labels), ...$args);
            if ($rc === Native::OK) {
                return;
            }
        }
        throw Native::exception($rc, $this->what(array_map('strval', array_values($labels))));
    }

    /**
     * An update with an exemplar: $function (`shmetrics_counter_add_exemplar`
     * or `shmetrics_observe_exemplar`) of $value on series $s, with the
     * exemplar's label names and values (`['trace_id' => '...']`). The
     * store checks them; a refused exemplar refuses the update too.
     *
     * @internal
     * @param array<mixed> $labels the series' label values
     * @param array<mixed> $exemplar
     */
    protected function updateWithExemplar(string $function, CData $s, array $labels, float $value, array $exemplar): void
    {
        $names = [];
        $values = [];
        foreach ($exemplar as $name => $v) {
            if (is_array($v) || (is_object($v) && !$v instanceof \Stringable)) {
                throw new InvalidArgumentException(sprintf(
                    '%s: exemplar label values must be strings or numbers, got %s',
                    $this->what(),
                    get_debug_type($v)
                ));
            }
            $names[] = (string) $name;
            $values[] = (string) $v;
        }
        [$n, $keepNames] = Native::strs($this->ffi, $names);
        [$vs, $keepValues] = Native::strs($this->ffi, $values);
        $args = [$value, $n === null ? null : FFI::addr($n[0]), $vs === null ? null : FFI::addr($vs[0]), count($names)];
        $rc = $this->ffi->{$function}($this->st, $s, ...$args);
        if ($rc === Native::INVALID_OPTIONS) {
            // The only refusal of its kind: the family keeps no exemplars.
            throw Native::exception($rc, sprintf(
                '%s was not registered with exemplars: true',
                $this->what(array_map('strval', array_values($labels)))
            ));
        }
        if ($rc !== Native::OK) {
            $this->failed($rc, $labels, $function, $args);
        }
        unset($keepNames, $keepValues);
    }

    /** "counter app_requests{route="/"}", for messages. */
    protected function what(?array $values = null): string
    {
        $s = $this->getType() . ' ' . $this->name;
        if ($values !== null && $values !== []) {
            $pairs = [];
            foreach ($values as $i => $v) {
                $pairs[] = ($this->labels[$i] ?? '?') . '=' . json_encode($v, JSON_INVALID_UTF8_SUBSTITUTE | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
            }
            $s .= '{' . implode(',', $pairs) . '}';
        }
        return $s;
    }

    /** @internal the `ttl_ms` to register the family with */
    protected function getTtlMs(): int
    {
        return $this->ttlMs;
    }

    private function ttlMs(?float $ttl): int
    {
        if ($ttl === null) {
            return 0;
        }
        if (!is_finite($ttl) || $ttl <= 0) {
            throw new InvalidArgumentException(sprintf(
                '%s: ttl must be a positive number of seconds, got %s',
                $this->what(),
                var_export($ttl, true)
            ));
        }
        // Whole milliseconds; out-of-range values are the store's to refuse.
        return $ttl * 1000 >= PHP_INT_MAX ? PHP_INT_MAX : max(1, (int) round($ttl * 1000));
    }

    private function reattach(): void
    {
        $this->family = $this->register();
        $this->series = [];
        $this->owners = [];
    }
}
