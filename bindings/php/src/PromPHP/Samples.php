<?php

declare(strict_types=1);

namespace Shmetrics\PromPHP;

/**
 * PromPHP's sample arrays (what `Prometheus\MetricFamilySamples` takes)
 * for one series of a `Shmetrics\Snapshot` family, in PromPHP's shapes:
 * a counter's or gauge's one sample under the family's name (name());
 * a histogram's `_bucket` samples (label `le`, cumulative, `+Inf` last),
 * `_count` and `_sum`; a summary's quantile samples (label `quantile`),
 * `_count` and `_sum`. A label the store adds (`pid`, `shmetrics_overflow`) comes
 * before `le` and `quantile`.
 *
 * @internal used by ShmetricsAdapter::collect()
 */
final class Samples
{
    private function __construct()
    {
    }

    /**
     * The family's name as PromPHP serves it, and the exporter's text
     * page too: a counter's as it was registered (`jobs` stays `jobs`,
     * `requests_total` stays `requests_total`, though the store keeps the
     * latter as `requests`), `name_total` for a counter registered without
     * `_total` by a binding that adds it (Python, Rust, C).
     *
     * @param array{name: string, type: string, nameAsGiven: bool} $family
     */
    public static function name(array $family): string
    {
        return $family['type'] === 'counter' && !$family['nameAsGiven']
            ? $family['name'] . '_total'
            : $family['name'];
    }

    /**
     * @param array{name: string, type: string, nameAsGiven: bool, buckets: list<float>} $family
     * @param array{labelValues: list<string>, extra: array<string, string>, value: float, count: int,
     *        cumulative: list<int>, quantiles: list<array{float, float}>} $series
     * @return list<array{name: string, labelNames: list<string>, labelValues: list<mixed>, value: int|float}>
     */
    public static function of(array $family, array $series): array
    {
        $name = self::name($family);
        $names = array_keys($series['extra']);
        $values = array_merge($series['labelValues'], array_values($series['extra']));
        $sample = static fn (string $suffix, array $extraNames, array $extraValues, int|float $value): array => [
            'name' => $name . $suffix,
            'labelNames' => array_merge($names, $extraNames),
            'labelValues' => array_merge($values, $extraValues),
            'value' => $value,
        ];
        $out = [];
        if ($family['type'] === 'histogram') {
            foreach ($series['cumulative'] as $i => $count) {
                $le = isset($family['buckets'][$i]) ? (string) $family['buckets'][$i] : '+Inf';
                $out[] = $sample('_bucket', ['le'], [$le], $count);
            }
        } elseif ($family['type'] === 'summary') {
            foreach ($series['quantiles'] as [$quantile, $estimate]) {
                $out[] = $sample('', ['quantile'], [$quantile], $estimate);
            }
        } else {
            return [$sample('', [], [], $series['value'])];
        }
        $out[] = $sample('_count', [], [], $series['count']);
        $out[] = $sample('_sum', [], [], $series['value']);
        return $out;
    }
}
