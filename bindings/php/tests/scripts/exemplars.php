<?php

// Another process of ExemplarsTest: registers the same two families and
// records one exemplar in each, later than the test's own.
// Usage: php exemplars.php STORE

declare(strict_types=1);

require dirname(__DIR__, 2) . '/autoload.php';

use Shmetrics\CollectorRegistry;

[, $path] = $argv;
$reg = new CollectorRegistry($path, false);
$reg->registerCounter('app', 'jobs_total', 'Jobs run.', ['queue'], exemplars: true)
    ->incBy(2, ['email'], ['trace_id' => 'child']);
$reg->registerHistogram('app', 'job_seconds', 'Job duration.', [], [0.1, 1], exemplars: true)
    ->observe(0.5, [], ['trace_id' => 'child-mid']);
