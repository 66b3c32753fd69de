<?php

// Instructions per request (valgrind's callgrind), which the load of a
// shared machine does not change as it changes times: the endpoint shape
// of benches/php/fpm-app.php (a fresh registry, 4 getOrRegister, 5
// updates) run N times in one PHP process with the package's static state
// reset each time, as php-fpm resets it between requests, with the FFI
// declarations from ffi.preload as in php-fpm. Each engine runs with N =
// 200 and N = 400; the difference over 200 is one request, without PHP's
// start-up. Also one update in a loop (Counter->inc with 2 labels,
// Histogram->observe with 1), the same way.
//
//     php benches/php/instructions.php
//
// Engines: the native Shmetrics\ API and PromPHP on ShmetricsAdapter, each
// on FFI and on the shmetrics extension ("+ext": $SHMETRICS_EXTENSION, else
// target/php-ext/ext/modules/shmetrics.so, which bindings/php/ext/build.sh
// target/php-ext builds), PromPHP on APCng, PromPHP on its Redis adapter (a local redis-server; callgrind
// counts the client's instructions, not the time it waits for the server),
// and noop (shape.php's BenchNoopRegistry: a userland API of the same shape
// whose updates do nothing, the floor of any PHP API called this way).
// Needs valgrind, php-apcu, php-redis, redis-server and PromPHP.

declare(strict_types=1);

require __DIR__ . '/promphp.php';
require __DIR__ . '/shape.php';

if (($argv[1] ?? '') === '--run') {
    run_shape($argv[2], $argv[3], (int) $argv[4]);
    exit(0);
}

$promphp = promphp_autoload() ?? exit("PromPHP not found: set PROMPHP_DIR\n");
$repo = dirname(__DIR__, 2);
$library = getenv('SHMETRICS_LIBRARY') ?: "$repo/target/release/libshmetrics.so";
is_file($library) || exit("$library is missing: cargo build --release -p shmetrics-ffi\n");
$extension = getenv('SHMETRICS_EXTENSION') ?: "$repo/target/php-ext/ext/modules/shmetrics.so";
is_file($extension) || exit("$extension is missing: bindings/php/ext/build.sh $repo/target/php-ext\n");
is_executable('/usr/bin/valgrind') || exit("valgrind is not installed\n");
$dir = sys_get_temp_dir() . '/shmetrics-instructions-' . getmypid();
mkdir($dir);
$header = "$dir/shmetrics.h";
file_put_contents($header, shell_exec(sprintf('%s %s %s', PHP_BINARY,
    escapeshellarg("$repo/bindings/php/bin/shmetrics-ffi-header"), escapeshellarg($library))));
$s = stream_socket_server('tcp://127.0.0.1:0');
$redisPort = (int) substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
fclose($s);
$redis = proc_open(['/usr/bin/redis-server', '--port', (string) $redisPort, '--bind', '127.0.0.1', '--save', '',
    '--appendonly', 'no', '--dir', $dir], [0 => ['file', '/dev/null', 'r'], 1 => ['file', "$dir/redis.log", 'a'],
    2 => ['file', "$dir/redis.log", 'a']], $pipes);
register_shutdown_function(static function () use ($redis, $dir): void {
    posix_kill(proc_get_status($redis)['pid'], SIGTERM);
    proc_close($redis);
    exec('rm -rf ' . escapeshellarg($dir));
});
usleep(300000);

/** Instructions of one `--run` of $shape on $engine, $n times. */
function instructions(string $dir, string $header, string $shape, string $engine, int $n, int $redisPort): int
{
    global $extension;
    $ext = str_ends_with($engine, '+ext') ? '-d extension=' . escapeshellarg($extension) : '';
    $cmd = sprintf('REDIS_PORT=%d SHMETRICS_STORE=%s valgrind --tool=callgrind --callgrind-out-file=/dev/null '
        . '%s -d ffi.enable=preload -d ffi.preload=%s -d opcache.enable_cli=1 -d apc.enable_cli=1 %s %s --run %s %s %d 2>&1',
        $redisPort, escapeshellarg("$dir/app.metrics"), PHP_BINARY, escapeshellarg($header), $ext,
        escapeshellarg(__FILE__), $shape, escapeshellarg(str_replace('+ext', '', $engine)), $n);
    $out = (string) shell_exec($cmd);
    preg_match('/refs:\s+([\d,]+)/', $out, $m) || exit("callgrind failed:\n$out");
    return (int) str_replace(',', '', $m[1]);
}

printf("PHP %s; instructions per request or update (callgrind; (N=400 - N=200) / 200)\n\n", PHP_VERSION);
printf("%-12s %14s %10s %16s %20s\n", 'engine', 'per request', 'vs APCng', 'inc([2 labels])', 'observe(v, [1 label])');
$per = [];
foreach (array_filter(explode(',', getenv('ENGINES') ?: 'native,native+ext,adapter,adapter+ext,apcng,redis,noop')) as $engine) {
    foreach (['request', 'inc', 'observe'] as $shape) {
        $n = $shape === 'request' ? 200 : 2000;
        $per[$engine][$shape] = (instructions($dir, $header, $shape, $engine, 2 * $n, $redisPort)
            - instructions($dir, $header, $shape, $engine, $n, $redisPort)) / $n;
    }
}
foreach ($per as $engine => $r) {
    printf("%-12s %14.0f %9.2fx %16.0f %20.0f\n", $engine, $r['request'], $r['request'] / ($per['apcng']['request'] ?? NAN),
        $r['inc'], $r['observe']);
}

/** The child: $shape on $engine, $n times. */
function run_shape(string $shape, string $engine, int $n): void
{
    require dirname(__DIR__, 2) . '/bindings/php/autoload.php';
    promphp_autoload();
    $reset = Closure::bind(static function (): void {
        Shmetrics\Native::$ffi = null;
    }, null, Shmetrics\Native::class);
    if ($shape !== 'request') {
        $registry = bench_registry($engine);
        $c = $registry->getOrRegisterCounter('app', 'requests', 'Requests served.', ['route', 'status']);
        $h = $registry->getOrRegisterHistogram('app', 'request_seconds', 'Request latency.', ['route']);
        $labels = $shape === 'inc' ? ['/users', '200'] : ['/users'];
        for ($i = 0; $i < $n; $i++) {
            $shape === 'inc' ? $c->inc($labels) : $h->observe(0.042, $labels);
        }
        return;
    }
    for ($i = 0; $i < $n; $i++) {
        $reset();
        bench_endpoint(bench_registry($engine));
    }
}
