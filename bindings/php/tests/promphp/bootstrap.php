<?php

// Bootstrap of PromPHP's own test suite on ShmetricsAdapter (see
// phpunit.xml): autoloaders for this package, for PromPHP's classes and
// tests from $PROMPHP_DIR (a copy of promphp/prometheus_client_php with its
// tests/ folder), and for the test classes here and their helpers; and a store of
// its own, removed at the end. scripts/php-tests.sh sets PROMPHP_DIR.

declare(strict_types=1);

// Under scripts/php-sanitizers.sh: the processes the tests start (php,
// php-fpm, the CLI, python3...) inherit the preloaded ASan runtime, with
// these options (no leak report at their exit; invalid accesses still
// abort them); only this process's exit reports leaks.
$childAsan = getenv('SHMETRICS_CHILD_ASAN_OPTIONS');
if (is_string($childAsan) && $childAsan !== '') {
    putenv("ASAN_OPTIONS=$childAsan");
}

error_reporting(-1);
date_default_timezone_set('UTC');

$promphp = getenv('PROMPHP_DIR');
if (!is_string($promphp) || !is_file("$promphp/src/Prometheus/Storage/Adapter.php")) {
    fwrite(STDERR, "set PROMPHP_DIR to a copy of promphp/prometheus_client_php (with its tests/), got: "
        . var_export($promphp, true) . "\n");
    exit(1);
}

require dirname(__DIR__, 2) . '/autoload.php';

$prefixes = [
    'Prometheus\\' => "$promphp/src/Prometheus/",
    'Test\\Prometheus\\' => "$promphp/tests/Test/Prometheus/",
    'Shmetrics\\Tests\\PromPHP\\' => __DIR__ . '/',
    'Shmetrics\\Tests\\' => dirname(__DIR__) . '/',
];
spl_autoload_register(static function (string $class) use ($prefixes): void {
    foreach ($prefixes as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});

$store = sys_get_temp_dir() . '/shmetrics-promphp-' . getmypid() . '.store';
define('PROMPHP_TEST_STORE', $store);
register_shutdown_function(static fn () => is_file($store) && unlink($store));
