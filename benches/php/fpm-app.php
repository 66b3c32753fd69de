<?php

// The endpoint benches/php/fpm.php serves through nginx and php-fpm: per
// request, a fresh registry, 4 getOrRegister and 5 updates, on the engine
// the path names: /native (Shmetrics\), /adapter (PromPHP on
// ShmetricsAdapter), /apcng (PromPHP on APCng), /redis (PromPHP on its
// Redis adapter, a local redis-server), /none (no metrics). Answers
// with the nanoseconds the metrics took.

declare(strict_types=1);

$engine = trim($_SERVER['DOCUMENT_URI'] ?? '/none', '/');
$start = hrtime(true);
$registry = match ($engine) {
    'native' => new Shmetrics\CollectorRegistry(new Shmetrics\Storage\Shmetrics(), false),
    'adapter' => new Prometheus\CollectorRegistry(new Shmetrics\PromPHP\ShmetricsAdapter(), false),
    'apcng' => new Prometheus\CollectorRegistry(new Prometheus\Storage\APCng(), false),
    'redis' => new Prometheus\CollectorRegistry(
        new Prometheus\Storage\Redis(['host' => '127.0.0.1', 'port' => (int) getenv('REDIS_PORT')]),
        false
    ),
    default => null,
};
if ($registry !== null) {
    $route = '/users';
    $inflight = $registry->getOrRegisterGauge('app', 'inflight', 'Requests in progress.');
    $requests = $registry->getOrRegisterCounter('app', 'requests', 'Requests served.', ['route', 'status']);
    $seconds = $registry->getOrRegisterHistogram('app', 'request_seconds', 'Request latency.', ['route']);
    $bytes = $registry->getOrRegisterCounter('app', 'response_bytes', 'Bytes sent.', ['route']);
    $inflight->inc();
    $requests->inc([$route, '200']);
    $seconds->observe(0.042, [$route]);
    $bytes->incBy(1234, [$route]);
    $inflight->dec();
}
echo hrtime(true) - $start;
