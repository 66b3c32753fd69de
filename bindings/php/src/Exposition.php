<?php

declare(strict_types=1);

namespace Shmetrics;

/**
 * What CollectorRegistry::getMetricFamilySamples() returns in place of
 * PromPHP's MetricFamilySamples: the whole store, all processes merged,
 * already rendered by the library in the Prometheus text format.
 * RenderTextFormat::render() takes a list of them.
 */
final class Exposition implements \Stringable
{
    public function __construct(private string $text)
    {
    }

    public function getText(): string
    {
        return $this->text;
    }

    public function __toString(): string
    {
        return $this->text;
    }
}
