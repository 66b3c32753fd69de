<?php

declare(strict_types=1);

namespace Shmetrics;

use Shmetrics\Exception\InvalidArgumentException;

/**
 * PromPHP's renderer, for code that does
 * `(new RenderTextFormat())->render($registry->getMetricFamilySamples())`.
 * The text itself is made by the library (crates/expo): this class only
 * joins what it is given.
 *
 * In production the exporter (`shmetrics serve`) serves the store, and no
 * PHP worker renders anything; this is for tests, CLI tools and an
 * in-app /metrics page during a migration.
 */
final class RenderTextFormat
{
    public const MIME_TYPE = 'text/plain; version=0.0.4';

    /**
     * @param list<Exposition> $metrics what getMetricFamilySamples() returned
     * @param bool $silent accepted for PromPHP's signature; nothing here can fail silently
     */
    public function render(array $metrics, bool $silent = false): string
    {
        $out = '';
        foreach ($metrics as $m) {
            if (!$m instanceof Exposition) {
                throw new InvalidArgumentException(
                    'RenderTextFormat renders what CollectorRegistry::getMetricFamilySamples() returns '
                    . '(Shmetrics\Exposition), got ' . get_debug_type($m)
                );
            }
            $out .= $m->getText();
        }
        return $out;
    }
}
