<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\CollectorRegistry;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\RenderTextFormat;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Tests\Support\TestCase;

/**
 * The shared test vectors (tests/vectors/updates.json) through PromPHP's
 * API. The C ABI, Python and Lua run the same file; all must render the
 * same text.
 */
final class VectorsTest extends TestCase
{
    /** @return array<string, array{0: array<string, mixed>}> */
    public static function cases(): array
    {
        $out = [];
        foreach (self::vectors()['cases'] as $case) {
            $out[$case['name']] = [$case];
        }
        return $out;
    }

    /** @return array<string, array{0: array<string, mixed>}> */
    public static function registerErrors(): array
    {
        $out = [];
        foreach (self::vectors()['register_errors'] as $i => $bad) {
            $out[$bad['family']['name'] . '/' . $bad['error'] . "/$i"] = [$bad];
        }
        return $out;
    }

    /** @return array<string, mixed> */
    private static function vectors(): array
    {
        $path = dirname(__DIR__, 3) . '/tests/vectors/updates.json';
        return json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }

    private static function value(mixed $v): float
    {
        return match ($v) {
            'NaN' => NAN,
            '+Inf' => INF,
            '-Inf' => -INF,
            default => (float) $v,
        };
    }

    /**
     * The vectors' text names a counter `name_total`, as the other layers
     * serve it; PHP serves a counter under the name it was given, as
     * PromPHP does, so it is given with `_total` (as the Lua runner does).
     *
     * @param array<string, mixed> $fam
     */
    private static function make(CollectorRegistry $reg, array $fam): object
    {
        $counter = str_ends_with($fam['name'], '_total') ? $fam['name'] : $fam['name'] . '_total';
        return match ($fam['kind']) {
            'counter' => $reg->registerCounter('', $counter, $fam['help'], $fam['labels'], $fam['exemplars'] ?? false),
            'gauge' => $reg->registerGauge('', $fam['name'], $fam['help'], $fam['labels'], $fam['mode']),
            'histogram' => $reg->registerHistogram(
                '',
                $fam['name'],
                $fam['help'],
                $fam['labels'],
                isset($fam['buckets']) ? array_map([self::class, 'value'], $fam['buckets']) : null,
                isset($fam['native']) ? ['bucketFactor' => $fam['native']['bucket_factor']] : null,
                $fam['exemplars'] ?? false
            ),
            'summary' => $reg->registerSummary(
                '',
                $fam['name'],
                $fam['help'],
                $fam['labels'],
                600,
                array_map([self::class, 'value'], $fam['quantiles'] ?? [])
            ),
        };
    }

    /**
     * @param array<string, object> $metrics
     * @param array<string, mixed> $op
     */
    private static function apply(array $metrics, array $op): void
    {
        $m = $metrics[$op['family']];
        $v = self::value($op['value']);
        $ex = $op['exemplar'] ?? null;  // an array of names to values, in the JSON's order
        match ($op['op']) {
            // A gauge's incBy() takes no exemplar (the extension's methods
            // refuse extra arguments, as PHP's internal functions do).
            'inc' => $ex === null ? $m->incBy($v, $op['labels']) : $m->incBy($v, $op['labels'], $ex),
            'set' => $m->set($v, $op['labels']),
            // A summary's observe() takes no exemplar.
            'observe' => $ex === null ? $m->observe($v, $op['labels']) : $m->observe($v, $op['labels'], $ex),
        };
    }

    /**
     * @dataProvider cases
     * @param array<string, mixed> $case
     */
    public function testCase(array $case): void
    {
        $reg = $this->registry();
        $metrics = [];
        foreach ($case['families'] as $fam) {
            $metrics[$fam['name']] = self::make($reg, $fam);
        }
        foreach ($case['ops'] as $op) {
            self::apply($metrics, $op);
        }
        foreach ($case['errors'] as $e) {
            try {
                self::apply($metrics, $e);
                self::fail('no exception for ' . json_encode($e));
            } catch (InvalidArgumentException $ex) {
                self::assertNotSame('', $ex->getMessage());
            }
        }
        self::assertSame(self::phpBounds($case['text']), (new RenderTextFormat())->render($reg->getMetricFamilySamples()));
        if (isset($case['openmetrics'])) {
            self::assertSame(
                self::phpBounds($case['openmetrics']),
                self::normalizeOpenMetrics($reg->getStorage()->render(Shmetrics::FORMAT_OPENMETRICS))
            );
        }
    }

    /**
     * $text with its `le` and `quantile` values written as PHP writes a
     * float, as PromPHP serves them (`le="1"`, `quantile="0.5"`): the
     * vectors write them in OpenMetrics' canonical form (`le="1.0"`), and
     * PHP's families have the `short_bounds` hint.
     */
    private static function phpBounds(string $text): string
    {
        return (string) preg_replace_callback(
            '/\b(le|quantile)="([^"]*)"/',
            static fn (array $m): string => sprintf(
                '%s="%s"',
                $m[1],
                is_numeric($m[2]) ? (string) (float) $m[2] : $m[2]  // +Inf stays
            ),
            $text
        );
    }

    /**
     * An OpenMetrics exposition as the vectors write it: without `_created`
     * samples, each exemplar's timestamp replaced by `T`.
     */
    private static function normalizeOpenMetrics(string $text): string
    {
        $out = '';
        foreach (explode("\n", rtrim($text, "\n")) as $line) {
            if (preg_match('/^[^{ ]*_created[{ ]/', $line)) {
                continue;
            }
            if (str_contains($line, ' # {')) {
                $line = substr($line, 0, (int) strrpos($line, ' ')) . ' T';
            }
            $out .= $line . "\n";
        }
        return $out;
    }

    /**
     * @dataProvider registerErrors
     * @param array<string, mixed> $bad
     */
    public function testRegisterError(array $bad): void
    {
        // PromPHP throws InvalidArgumentException for a bad definition too.
        // The binding registers under the legacy name rules, as PromPHP
        // checks names: `legacy_only` cases are refused as well.
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage(str_replace('_', ' ', $bad['error']));  // "invalid name", ...
        self::make($this->registry(), $bad['family']);
    }
}
