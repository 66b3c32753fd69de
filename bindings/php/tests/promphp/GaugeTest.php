<?php

// PromPHP's own Gauge tests (tests/Test/Prometheus/AbstractGaugeTest.php of
// $PROMPHP_DIR), run on ShmetricsAdapter as PromPHP runs them on APCng.

declare(strict_types=1);

namespace Shmetrics\Tests\PromPHP;

final class GaugeTest extends \Test\Prometheus\AbstractGaugeTest
{
    use OnShmetrics;
}
