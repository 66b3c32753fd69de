<?php

// The application ApacheTest serves through Apache's mod_php (prefork):
// each request counts itself twice in the store named by SHMETRICS_STORE
// (Apache's `SetEnv`), the way each API's users write it: with the native
// Shmetrics\ API (the default registry, a livesum in-flight gauge) and with
// PromPHP's own classes on ShmetricsAdapter (a counter and a histogram);
// then answers with the worker's pid. PromPHP comes from PROMPHP_DIR
// (`SetEnv`), loaded by an autoloader of its own, as Composer's would.
// /slow, once counted, writes the child's pid to slow.pid next to the
// store and sleeps; /setup describes the PHP setup instead.

declare(strict_types=1);

$promphp = getenv('PROMPHP_DIR') . '/src/Prometheus/';
spl_autoload_register(static function (string $class) use ($promphp): void {
    if (str_starts_with($class, 'Prometheus\\')) {
        require $promphp . str_replace('\\', '/', substr($class, 11)) . '.php';
    }
});
// Preloaded (opcache.preload, ffi.enable=preload) or not (ffi.enable=true).
// (Shmetrics\Native is PHP in every setup; the extension defines the metric classes.)
$preloaded = class_exists(Shmetrics\Native::class, false);
if (!$preloaded) {
    require dirname(__DIR__, 2) . '/autoload.php';
}

$start = hrtime(true);
$route = parse_url($_SERVER['REQUEST_URI'] ?? '/', PHP_URL_PATH) ?: '/';
if ($route === '/setup') {
    // What runs: the test checks it is the setup it configured.
    echo json_encode([
        'sapi' => PHP_SAPI,
        'preloaded' => $preloaded,
        'ffi.enable' => ini_get('ffi.enable'),
        'extension' => extension_loaded('shmetrics'),
        'version' => Shmetrics\Native::version(),
    ]);
    return;
}

// The native API.
$registry = Shmetrics\CollectorRegistry::getDefault();
$inflight = $registry->getOrRegisterGauge('apache', 'inflight', 'Requests in progress.', [], 'livesum');
$inflight->inc();
$registry->getOrRegisterCounter('apache', 'requests_total', 'Requests served.', ['route'])->inc([$route]);

// PromPHP, its storage swapped for the store.
$promphp = new Prometheus\CollectorRegistry(new Shmetrics\PromPHP\ShmetricsAdapter(), false);
$promphp->getOrRegisterCounter('promphp', 'requests_total', 'Requests served.', ['route'])->inc([$route]);
$promphp->getOrRegisterHistogram('promphp', 'request_seconds', 'Request latency.', ['route'], [0.001, 0.01, 0.1, 1])
    ->observe((hrtime(true) - $start) / 1e9, [$route]);

if ($route === '/slow') {
    // ApacheTest kills this child with SIGKILL here, counted and in flight.
    file_put_contents(dirname((string) getenv('SHMETRICS_STORE')) . '/slow.pid', getmypid());
    sleep(30);
}
$inflight->dec();
header('Content-Type: text/plain');
echo getmypid(), "\n";
