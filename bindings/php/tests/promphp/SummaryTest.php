<?php

// PromPHP's own Summary tests (tests/Test/Prometheus/AbstractSummaryTest.php of
// $PROMPHP_DIR), run on ShmetricsAdapter as PromPHP runs them on APCng.

declare(strict_types=1);

namespace Shmetrics\Tests\PromPHP;

final class SummaryTest extends \Test\Prometheus\AbstractSummaryTest
{
    use OnShmetrics;
}
