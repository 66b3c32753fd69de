<?php

// The workload of the PromPHP pair (tests/migration/test_promphp.py), served
// by php-fpm. `?backend=` picks the storage, and only that differs:
//   apcng    PromPHP's CollectorRegistry on APCng (the peer);
//   adapter  PromPHP's CollectorRegistry on Shmetrics\PromPHP\ShmetricsAdapter
//            (docs/migrating.md's one-line switch);
//   native   Shmetrics\CollectorRegistry, the package's own PromPHP-shaped API.
// /work?backend=B&i=N makes request N's updates; /metrics?backend=apcng is
// the peer's page (PromPHP's RenderTextFormat over APCng, as an APCng
// application serves it). The shmetrics stores are served by the exporter.

declare(strict_types=1);

$promphp = getenv('PROMPHP_DIR');
require getenv('SHMETRICS_PHP_DIR') . '/autoload.php';
spl_autoload_register(static function (string $class) use ($promphp): void {
    if (str_starts_with($class, 'Prometheus\\')) {
        $file = "$promphp/src/" . str_replace('\\', '/', $class) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

if (($_SERVER['DOCUMENT_URI'] ?? '') === '/engine') {
    // Which engine the binding runs on here: the test checks it is the one
    // it set up.
    echo Shmetrics\Native::extension() ? 'extension' : 'ffi';
    return;
}

$backend = $_GET['backend'] ?? '';
$registry = match ($backend) {
    'apcng' => new Prometheus\CollectorRegistry(new Prometheus\Storage\APCng()),
    'adapter' => new Prometheus\CollectorRegistry(new Shmetrics\PromPHP\ShmetricsAdapter(getenv('MIGRATION_ADAPTER_STORE'))),
    'native' => new Shmetrics\CollectorRegistry(new Shmetrics\Storage\Shmetrics(getenv('MIGRATION_NATIVE_STORE'))),
};

if (($_SERVER['DOCUMENT_URI'] ?? '') === '/metrics') {
    header('Content-Type: ' . Prometheus\RenderTextFormat::MIME_TYPE);
    echo (new Prometheus\RenderTextFormat())->render($registry->getMetricFamilySamples());
    return;
}

// Label values with quotes, a backslash, a newline, UTF-8 and the empty string.
const LABELS = ['plain', 'say "hi"', 'back\\slash', "new\nline", 'ütf-8 ✓ 日本', ''];
$i = (int) ($_GET['i'] ?? 0);
$v = LABELS[$i % count(LABELS)];
$route = '/r' . ($i % 3);
$ns = 'myapp';

// Counters with `_total` and without (PromPHP's own README registers `some_counter`).
$registry->getOrRegisterCounter($ns, 'requests_total', 'Number of HTTP requests', ['route', 'status'])
    ->inc([$route, (string) (200 + ($i % 2) * 300)]);
$registry->getOrRegisterCounter($ns, 'jobs', 'Jobs per code and service', ['code', 'service'])
    ->inc([(string) (200 + $i % 4), $v]);
$registry->getOrRegisterCounter($ns, 'bandwidth_bytes', 'Total bandwidth in bytes', [])
    ->incBy(($i % 7) + 0.25);
// Constant per label value: the same whichever worker sets it last.
$registry->getOrRegisterGauge($ns, 'connections', 'Connections by state', ['state'])
    ->set(strlen($v) + 0.5, [$v]);
$registry->getOrRegisterGauge($ns, 'inflight_units', 'A gauge that only rises', [])
    ->incBy(0.5);
// Integer and fractional bounds, integer bounds only, and the default ones.
$registry->getOrRegisterHistogram($ns, 'request_duration_seconds', 'HTTP request latency', ['route'], [0.005, 0.25, 1, 2.5, 10])
    ->observe(($i % 13) * 0.25, [$route]);
$registry->getOrRegisterHistogram($ns, 'response_size_bytes', 'Response sizes', [], [1, 10, 100, 1000])
    ->observe($i % 1500);
$registry->getOrRegisterHistogram($ns, 'upstream_seconds', 'Upstream latency, default buckets', ['service'])
    ->observe(($i % 11) / 10, [$v]);
echo getmypid(), "\n";
