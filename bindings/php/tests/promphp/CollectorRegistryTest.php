<?php

// PromPHP's own CollectorRegistry tests (tests/Test/Prometheus/AbstractCollectorRegistryTest.php of
// $PROMPHP_DIR), run on ShmetricsAdapter as PromPHP runs them on APCng.

declare(strict_types=1);

namespace Shmetrics\Tests\PromPHP;

final class CollectorRegistryTest extends \Test\Prometheus\AbstractCollectorRegistryTest
{
    use OnShmetrics;
}
