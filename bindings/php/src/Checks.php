<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\MetricNotFoundException;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Exception\ShmetricsException;

/**
 * The checks the binding makes before the store's own, and the messages of
 * every refusal, in one place for both implementations of the metric
 * classes: the PHP classes of src/ (on FFI) and the native ones of the
 * `shmetrics` extension (ext/), which calls these methods on its slow
 * paths only (a label value that is not a string or an integer, a
 * refusal, an exemplar). $what names the metric: "counter app_requests".
 *
 * @internal
 */
final class Checks
{
    private function __construct()
    {
    }

    /**
     * The label values joined by "\xff", the key the library caches series
     * by; or the refusal: the wrong number of values, a value that is not a
     * string, number or Stringable, or one with the byte "\xff" (never in
     * UTF-8; it would split the joined values).
     *
     * @param list<string> $labelNames
     * @param array<mixed> $labels
     */
    public static function labelValues(string $what, array $labelNames, array $labels): string
    {
        if (count($labels) !== count($labelNames)) {
            throw new InvalidArgumentException(sprintf(
                '%s takes %d label value%s (%s), got %d: %s',
                $what,
                count($labelNames),
                count($labelNames) === 1 ? '' : 's',
                implode(', ', $labelNames),
                count($labels),
                json_encode(array_values($labels), JSON_INVALID_UTF8_SUBSTITUTE | JSON_UNESCAPED_SLASHES)
            ));
        }
        foreach ($labels as $v) {
            if (is_array($v) || (is_object($v) && !$v instanceof \Stringable)) {
                throw new InvalidArgumentException(sprintf(
                    '%s: label values must be strings or numbers, got %s',
                    $what,
                    get_debug_type($v)
                ));
            }
            if (str_contains((string) $v, "\xff")) {
                throw new InvalidArgumentException(
                    self::what($what, $labelNames, $labels) . ': a label value is not UTF-8',
                    Native::INVALID_UTF8
                );
            }
        }
        // Joined once every value is known to be a string or number.
        return $labels ? \implode("\xff", $labels) : '';
    }

    /**
     * The exemplar's label names and values as strings.
     *
     * @param array<mixed> $exemplar
     * @return array{0: list<string>, 1: list<string>}
     */
    public static function exemplar(string $what, array $exemplar): array
    {
        $names = [];
        $values = [];
        foreach ($exemplar as $name => $v) {
            if (is_array($v) || (is_object($v) && !$v instanceof \Stringable)) {
                throw new InvalidArgumentException(sprintf(
                    '%s: exemplar label values must be strings or numbers, got %s',
                    $what,
                    get_debug_type($v)
                ));
            }
            $names[] = (string) $name;
            $values[] = (string) $v;
        }
        return [$names, $values];
    }

    /**
     * The exception for a refused update (result code $rc) of the series
     * of $labels.
     *
     * @param list<string> $labelNames
     * @param array<mixed> $labels
     */
    public static function updateFailed(int $rc, string $what, array $labelNames, array $labels, bool $exemplar = false): ShmetricsException
    {
        if ($exemplar && $rc === Native::INVALID_OPTIONS) {
            // The only refusal of its kind: the family keeps no exemplars.
            return Native::exception($rc, self::what($what, $labelNames, $labels) . ' was not registered with exemplars: true');
        }
        return Native::exception($rc, self::what($what, $labelNames, $labels));
    }

    /**
     * "counter app_requests{route="/"}", for messages.
     *
     * @param list<string> $labelNames
     * @param array<mixed>|null $labels
     */
    public static function what(string $what, array $labelNames, ?array $labels = null): string
    {
        if ($labels === null || $labels === []) {
            return $what;
        }
        $pairs = [];
        foreach (array_values($labels) as $i => $v) {
            $v = is_array($v) ? 'Array' : (string) $v;
            $pairs[] = ($labelNames[$i] ?? '?') . '=' . json_encode($v, JSON_INVALID_UTF8_SUBSTITUTE | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
        }
        return $what . '{' . implode(',', $pairs) . '}';
    }

    /** The `ttl_ms` of a family's description for a TTL of $ttl seconds; 0 for none. */
    public static function ttlMs(string $what, ?float $ttl): int
    {
        if ($ttl === null) {
            return 0;
        }
        if (!is_finite($ttl) || $ttl <= 0) {
            throw new InvalidArgumentException(sprintf(
                '%s: ttl must be a positive number of seconds, got %s',
                $what,
                var_export($ttl, true)
            ));
        }
        // Whole milliseconds; out-of-range values are the store's to refuse.
        return $ttl * 1000 >= PHP_INT_MAX ? PHP_INT_MAX : max(1, (int) round($ttl * 1000));
    }

    /** @param array<mixed> $labels the label names */
    public static function labelNames(string $what, array $labels): void
    {
        foreach ($labels as $l) {
            if (!is_string($l)) {
                throw new InvalidArgumentException("$what: label names must be strings, got " . get_debug_type($l));
            }
        }
    }

    /** @param array<mixed> $numbers buckets or quantiles */
    public static function numbers(string $what, array $numbers): void
    {
        foreach ($numbers as $v) {
            if (!is_int($v) && !is_float($v)) {
                throw new InvalidArgumentException("$what: expected numbers, got " . get_debug_type($v));
            }
        }
    }

    /** The options a new store accepts, as in `shmetrics_options`. */
    private const STORE_OPTIONS = [
        'create' => 'bool', 'read_only' => 'bool', 'mode' => 'u32', 'max_families' => 'u32',
        'max_series' => 'u32', 'label_bytes' => 'u64', 'max_writers' => 'u32', 'cells_per_writer' => 'u64',
        'sketch_cells_per_writer' => 'u64',
    ];

    /**
     * Refuses an unknown store option or a value of the wrong type or out
     * of range, before the options go to `shmetrics_options`.
     *
     * @param array<mixed> $options
     */
    public static function storeOptions(array $options): void
    {
        foreach ($options as $key => $value) {
            $type = self::STORE_OPTIONS[$key] ?? null;
            if ($type === null) {
                throw new InvalidArgumentException(sprintf(
                    'unknown store option "%s"; the options are %s',
                    $key,
                    implode(', ', array_keys(self::STORE_OPTIONS))
                ));
            }
            $ok = $type === 'bool'
                ? is_bool($value)
                : is_int($value) && $value >= 0 && ($type === 'u64' || $value <= 0xFFFFFFFF);
            if (!$ok) {
                throw new InvalidArgumentException(sprintf(
                    'store option "%s" must be %s, got %s',
                    $key,
                    $type === 'bool' ? 'a bool' : ($type === 'u32' ? 'an integer from 0 to 2^32-1' : 'a non-negative integer'),
                    var_export($value, true)
                ));
            }
        }
    }

    public static function emptyStorePath(): InvalidArgumentException
    {
        return new InvalidArgumentException('the store path is empty: pass a file path such as /dev/shm/myapp.metrics');
    }

    public static function unknownFormat(int $format): InvalidArgumentException
    {
        return new InvalidArgumentException("unknown exposition format $format; use FORMAT_TEXT or FORMAT_OPENMETRICS");
    }

    /** @param array<string, int> $modes */
    public static function unknownGaugeMode(string $mode, array $modes): InvalidArgumentException
    {
        return new InvalidArgumentException(sprintf(
            'unknown gauge mode "%s"; the modes are %s',
            $mode,
            implode(', ', array_keys($modes))
        ));
    }

    public static function emptyBuckets(string $name): InvalidArgumentException
    {
        return new InvalidArgumentException(
            "histogram $name: buckets must hold at least one bound; pass null for the default buckets"
        );
    }

    /**
     * The largest summary maxAgeSeconds whose milliseconds fit the C field
     * (and a PHP int); the store has its own, lower limit.
     */
    public const MAX_AGE_SECONDS = 9223372036854775;

    public static function maxAge(string $name, int $maxAgeSeconds): InvalidArgumentException
    {
        return new InvalidArgumentException(sprintf(
            'summary %s: maxAgeSeconds must be from 1 to %d, got %d',
            $name,
            self::MAX_AGE_SECONDS,
            $maxAgeSeconds
        ));
    }

    /** No exposition format: what an int out of a u32's range is given as, for the library to refuse. */
    public const NO_FORMAT = 0xFFFFFFFF;

    /**
     * $format as the C ABI's u32 takes it: itself for PHP's formats (text and
     * OpenMetrics), else NO_FORMAT, never its low bits. The library's other
     * formats are other bindings' page shapes (client_ruby's text).
     */
    public static function format(int $format): int
    {
        return $format === 0 || $format === 1 ? $format : self::NO_FORMAT;
    }

    /**
     * A histogram's $native options as the C ABI's fields: the factor, the
     * zero threshold (0 for the default) and the bucket limit (0 for the
     * default, UINT32_MAX for none). The store checks the values.
     *
     * @param list<string> $keys the option names
     * @param array<mixed> $native
     * @return array{float, float, int}
     */
    public static function nativeDesc(string $name, array $keys, array $native): array
    {
        foreach ($native as $key => $value) {
            if (!in_array($key, $keys, true)) {
                throw new InvalidArgumentException(sprintf(
                    'histogram %s: unknown native option "%s"; the options are %s',
                    $name,
                    $key,
                    implode(', ', $keys)
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

    /** The most bucket bounds a histogram takes (the store's limit, MAX_BUCKETS in crates/core). */
    public const MAX_BUCKETS = 512;

    /**
     * Histogram::exponentialBuckets().
     *
     * @return list<float>
     */
    public static function exponentialBuckets(float $start, float $growthFactor, int $numberOfBuckets): array
    {
        if ($numberOfBuckets < 1 || $numberOfBuckets > self::MAX_BUCKETS) {
            // Past the store's limit, a list the store would refuse (and,
            // near PHP_INT_MAX, one PHP cannot allocate: a fatal error).
            throw new InvalidArgumentException(sprintf(
                'the number of buckets must be from 1 to %d (the store\'s limit), got %d',
                self::MAX_BUCKETS,
                $numberOfBuckets
            ));
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

    /** The refusal of a second registration of a name in one registry. */
    public static function registeredTwice(string $type, string $namespace, string $name): MetricsRegistrationException
    {
        return new MetricsRegistrationException(sprintf(
            'the %s %s is already registered in this registry; use getOrRegister%s() to get it',
            $type,
            ($namespace !== '' ? $namespace . '_' : '') . $name,
            ucfirst($type)
        ));
    }

    public static function notFound(string $type, string $namespace, string $name): MetricNotFoundException
    {
        return new MetricNotFoundException(sprintf(
            'no %s %s in this registry: register it first (register%s or getOrRegister%s)',
            $type,
            ($namespace !== '' ? $namespace . '_' : '') . $name,
            ucfirst($type),
            ucfirst($type)
        ));
    }
}
