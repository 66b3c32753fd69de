<?php

// PromPHP's own Histogram tests (tests/Test/Prometheus/AbstractHistogramTest.php of
// $PROMPHP_DIR), run on ShmetricsAdapter as PromPHP runs them on APCng.

declare(strict_types=1);

namespace Shmetrics\Tests\PromPHP;

final class HistogramTest extends \Test\Prometheus\AbstractHistogramTest
{
    use OnShmetrics;
}
