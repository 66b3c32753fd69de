<?php

// PromPHP's own Counter tests (tests/Test/Prometheus/AbstractCounterTest.php of
// $PROMPHP_DIR), run on ShmetricsAdapter as PromPHP runs them on APCng.

declare(strict_types=1);

namespace Shmetrics\Tests\PromPHP;

final class CounterTest extends \Test\Prometheus\AbstractCounterTest
{
    use OnShmetrics;
}
