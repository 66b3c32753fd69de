<?php

// One "request" of a PromPHP application on ShmetricsAdapter, in a process
// of its own: a fresh registry on the store at argv[1], a counter, a
// histogram and a summary. Prints its pid.
//   php request.php STORE

declare(strict_types=1);

require dirname(__DIR__) . '/bootstrap.php';

use Prometheus\CollectorRegistry;
use Shmetrics\PromPHP\ShmetricsAdapter;

$registry = new CollectorRegistry(new ShmetricsAdapter($argv[1]), false);
$registry->getOrRegisterCounter('app', 'requests', 'Requests served.', ['route'])->inc(['/users']);
$registry->getOrRegisterHistogram('app', 'seconds', 'Latency.', ['route'], [0.1, 1])->observe(0.5, ['/users']);
$registry->getOrRegisterSummary('app', 'bytes', 'Response sizes.', [], 600, [0.5])->observe(1000);
echo getmypid();
