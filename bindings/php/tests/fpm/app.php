<?php

// The application FpmTest serves through nginx and php-fpm: counts the
// request by route, observes its duration, tracks it in flight, and
// answers with the worker's pid. On /conflict, it then registers
// fpm_requests again, with other labels, in a registry of its own: the
// answer's second line says how that was refused (it must be).

declare(strict_types=1);

// Storage\Shmetrics is PHP in every setup (the extension provides the
// metric classes, not this one): it tells whether the package is preloaded.
if (!class_exists(Shmetrics\Storage\Shmetrics::class)) {
    require dirname(__DIR__, 2) . '/autoload.php';  // not preloaded (ffi.enable=true)
}

use Shmetrics\CollectorRegistry;

$start = hrtime(true);
$route = $_SERVER['DOCUMENT_URI'] ?? '/';
$registry = CollectorRegistry::getDefault();
$inflight = $registry->getOrRegisterGauge('fpm', 'inflight', 'Requests in progress.', [], 'livesum');
$inflight->inc();
$registry->getOrRegisterCounter('fpm', 'requests_total', 'Requests served.', ['route', 'status'])->inc([$route, '200']);
$registry->getOrRegisterHistogram('fpm', 'request_seconds', 'Request latency.', ['route'], [0.001, 0.01, 0.1, 1])
    ->observe((hrtime(true) - $start) / 1e9, [$route]);
$inflight->dec();
echo getmypid(), "\n";
if ($route === '/conflict') {
    try {
        (new CollectorRegistry(null, false))->getOrRegisterCounter('fpm', 'requests_total', 'Requests served.', ['route']);
        echo "accepted\n";
    } catch (Throwable $e) {
        echo 'refused: ', get_class($e), ': ', $e->getMessage(), "\n";
    }
}
