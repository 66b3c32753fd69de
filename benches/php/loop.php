<?php

// The endpoint shape of issue 17 (shape.php: a fresh registry, 4
// getOrRegister, 5 updates) timed in one CLI process, engines in turns:
// the time per request with warm caches, to set beside fpm.php's (the
// same shape inside php-fpm, where caches are cold after every switch to
// nginx or another process). Medians of 2,000 requests per engine, in µs.
//
//     php -d opcache.enable_cli=1 -d apc.enable_cli=1 [-d extension=...shmetrics.so] \
//         benches/php/loop.php [ENGINE ...]      (default: native adapter apcng)
//
// Needs $SHMETRICS_LIBRARY (or the library on the system's path), php-apcu
// and PromPHP ($PROMPHP_DIR or the pinned copy); the store is
// $SHMETRICS_STORE, else the default.

declare(strict_types=1);

require __DIR__ . '/promphp.php';
require __DIR__ . '/shape.php';
require dirname(__DIR__, 2) . '/bindings/php/autoload.php';
promphp_autoload() ?? exit("PromPHP not found: set PROMPHP_DIR\n");

$engines = array_slice($argv, 1) ?: ['native', 'adapter', 'apcng'];
$ns = array_fill_keys($engines, []);
for ($r = 0; $r < 40; $r++) {
    foreach ($engines as $e) {
        for ($i = 0; $i < 50; $i++) {
            $t = hrtime(true);
            bench_endpoint(bench_registry($e));
            $ns[$e][] = hrtime(true) - $t;
        }
    }
}
printf("PHP %s, shmetrics extension %s; µs per request, median of 2,000\n", PHP_VERSION,
    extension_loaded('shmetrics') ? 'loaded' : 'not loaded (FFI)');
$p50 = array_map(static function (array $v): float {
    sort($v);
    return $v[intdiv(count($v), 2)] / 1000;
}, $ns);
foreach ($p50 as $e => $us) {
    printf("%-10s %8.1f%s\n", $e, $us, isset($p50['apcng']) ? sprintf(' (%.2fx APCng)', $us / $p50['apcng']) : '');
}
