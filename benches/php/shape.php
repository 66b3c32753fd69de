<?php

// The endpoint shape of issue 17 that benches/php/fpm-app.php serves and
// benches/php/instructions.php counts: a fresh registry, 4 getOrRegister
// and 5 updates, on one engine: native (Shmetrics\), adapter (PromPHP on
// ShmetricsAdapter), apcng (PromPHP on APCng), redis (PromPHP on its Redis
// adapter, at 127.0.0.1:$REDIS_PORT).

declare(strict_types=1);

/** A fresh registry of $engine; null for "none". */
function bench_registry(string $engine): ?object
{
    return match ($engine) {
        'native' => new Shmetrics\CollectorRegistry(new Shmetrics\Storage\Shmetrics(), false),
        'adapter' => new Prometheus\CollectorRegistry(new Shmetrics\PromPHP\ShmetricsAdapter(), false),
        'apcng' => new Prometheus\CollectorRegistry(new Prometheus\Storage\APCng(), false),
        'redis' => new Prometheus\CollectorRegistry(
            new Prometheus\Storage\Redis(['host' => '127.0.0.1', 'port' => (int) getenv('REDIS_PORT')]),
            false
        ),
        default => null,
    };
}

/** 4 getOrRegister and 5 updates on $registry. */
function bench_endpoint(object $registry): void
{
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
