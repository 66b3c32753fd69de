<?php

// Per request in a real php-fpm behind nginx: the endpoint shape of issue
// 17 (a fresh registry, 4 getOrRegister, 5 updates; fpm-app.php) on the
// native Shmetrics\ API, on PromPHP with ShmetricsAdapter, on PromPHP with
// APCng and on PromPHP with its Redis adapter (a local redis-server, no
// persistence), in the same run, with the setup docs/php.md recommends
// (ffi.enable=preload, ffi.preload, opcache.preload; fpm-preload.php).
// The native API and the adapter run twice: on FFI, and on the shmetrics
// extension ("+ext"), in a second php-fpm with the same ini plus
// `extension=` ($SHMETRICS_EXTENSION, else target/php-ext/ext/modules/
// shmetrics.so, which `bindings/php/ext/build.sh target/php-ext` builds);
// nginx sends /ext/* to it. Both php-fpms also serve "noop" (shape.php's
// BenchNoopRegistry: a preloaded userland API of the same shape whose
// updates do nothing, the floor any PHP metrics API called this way pays)
// and "none" (no metrics); the extension's also serves "store" (only
// `new Shmetrics\Storage\Shmetrics()`: the per-request check that the
// store's path still names the mapped file, which every engine on the
// store pays and the floor does not).
//
//     php benches/php/fpm.php [--quick]
//
// Prints, per engine: the time the metrics took inside the request
// (median and mean of hrtime around the shape, in µs, over requests sent
// one at a time, the engines taking turns), and php-fpm's throughput with
// wrk (2 threads, 8 connections, 3 s; the median of 5 runs, the engines taking
// turns) as a share of the same endpoint without metrics on the same
// php-fpm: "+ext" engines against /ext/none, the others against /none.
// Needs php-fpm, nginx, wrk, php-apcu, redis-server, php-redis and PromPHP ($PROMPHP_DIR or the
// pinned copy). scripts/setup.sh's ensure_php and ensure_lua install all but the
// Redis pair, which only this bench uses: `apt-get install redis-server php-redis`.

declare(strict_types=1);

require __DIR__ . '/promphp.php';

const ENGINES = ['native', 'native+ext', 'adapter', 'adapter+ext', 'apcng', 'redis', 'noop', 'noop+ext',
    'store+ext', 'none', 'none+ext'];

$quick = in_array('--quick', $argv, true);
$rounds = $quick ? 10 : 40;
$perTurn = 50;
$wrkSeconds = $quick ? 2 : 3;
$wrkRuns = $quick ? 3 : 5;

$promphp = promphp_autoload() ?? exit("PromPHP not found: set PROMPHP_DIR\n");
$repo = dirname(__DIR__, 2);
$library = getenv('SHMETRICS_LIBRARY') ?: "$repo/target/release/libshmetrics.so";
$extension = getenv('SHMETRICS_EXTENSION') ?: "$repo/target/php-ext/ext/modules/shmetrics.so";
$fpmBin = glob('/usr/sbin/php-fpm*')[0] ?? exit("php-fpm is not installed\n");
foreach (['/usr/sbin/nginx', '/usr/bin/wrk', '/usr/bin/redis-server', $library, $extension] as $need) {
    is_file($need) || exit("$need is missing\n");
}

$dir = (is_dir('/dev/shm') ? '/dev/shm' : sys_get_temp_dir()) . '/shmetrics-fpm-bench-' . getmypid();
mkdir("$dir/nginx", 0755, true);
chmod($dir, 0755);
$procs = [];
register_shutdown_function(static function () use (&$procs, $dir): void {
    foreach (array_reverse($procs) as $p) {
        $pid = proc_get_status($p)['pid'];
        posix_kill($pid, SIGTERM);
        proc_close($p);
    }
    exec('rm -rf ' . escapeshellarg($dir));
});

[$fpmPort, $extPort, $nginxPort, $redisPort] = [free_port(), free_port(), free_port(), free_port()];
write_configs($dir, $repo, $library, $extension, $promphp, [$fpmPort, $extPort], $nginxPort, $redisPort);
$procs[] = start(['/usr/bin/redis-server', '--port', (string) $redisPort, '--bind', '127.0.0.1', '--save', '',
    '--appendonly', 'no', '--dir', $dir], "$dir/redis.out");
$root = posix_geteuid() === 0;
foreach (['', '-ext'] as $v) {
    $procs[] = start([$fpmBin, '--nodaemonize', '-c', "$dir/php$v.ini", '-y', "$dir/fpm$v.conf",
        ...($root ? ['--allow-to-run-as-root'] : [])], "$dir/fpm$v.out");
}
$procs[] = start(['/usr/sbin/nginx', '-p', "$dir/nginx", '-c', "$dir/nginx/nginx.conf", '-g', 'daemon off;'],
    "$dir/nginx.out");
$base = "http://127.0.0.1:$nginxPort";
wait_for("$base/none", $dir);
wait_for("$base/ext/none", $dir);

/** The path of $engine's endpoint: /native, /ext/native, ..., /none, /ext/none */
function path(string $engine): string
{
    return str_ends_with($engine, '+ext') ? '/ext/' . substr($engine, 0, -4) : "/$engine";
}

printf("PHP %s, php-fpm (2 static workers, ffi.enable=preload, opcache.preload) behind nginx; PromPHP from %s\n",
    PHP_VERSION, $promphp);
printf("+ext: a second php-fpm, the same but with extension=%s\n", $extension);
printf("endpoint: fresh registry + 4 getOrRegister + 5 updates (benches/php/fpm-app.php); load average: %s\n\n",
    implode(' ', array_map(static fn (float $l): string => sprintf('%.2f', $l), sys_getloadavg())));

// Warm up every worker on every engine (the first request of a worker
// opens the store, claims a writer slot, fills opcache).
foreach (ENGINES as $e) {
    for ($i = 0; $i < 20; $i++) {
        get($base . path($e));
    }
}
$ns = array_fill_keys(ENGINES, []);
for ($r = 0; $r < $rounds; $r++) {
    foreach (ENGINES as $e) {
        for ($i = 0; $i < $perTurn; $i++) {
            $ns[$e][] = (int) get($base . path($e));
        }
    }
}
check_counted("$dir/app.metrics", 4 * (20 + $rounds * $perTurn));
// Throughput: $wrkRuns wrk runs per engine, in turns; the median of each.
$runs = array_fill_keys(ENGINES, []);
for ($r = 0; $r < $wrkRuns; $r++) {
    foreach (ENGINES as $e) {
        $out = shell_exec(sprintf('wrk -t2 -c8 -d%ds %s 2>&1', $wrkSeconds, escapeshellarg($base . path($e))));
        $runs[$e][] = preg_match('/Requests\/sec:\s+([\d.]+)/', (string) $out, $m) ? (float) $m[1] : NAN;
    }
}
$rps = array_map(static function (array $v): float {
    sort($v);
    return $v[intdiv(count($v), 2)];
}, $runs);
/** The endpoint without metrics on $engine's php-fpm: what its req/s is a share of. */
$noneOf = static fn (string $engine): string => str_ends_with($engine, '+ext') ? 'none+ext' : 'none';

$median = static function (array $v): float {
    sort($v);
    return $v[intdiv(count($v), 2)] / 1000;
};
printf("%-12s %18s %16s %14s %12s %16s  %s\n", 'engine', 'in request µs p50', 'in request mean', 'vs APCng p50',
    'req/s', 'vs no metrics', 'of');
foreach (ENGINES as $e) {
    printf("%-12s %18.1f %16.1f %14s %12.0f %15.1f%%  %s\n", $e, $median($ns[$e]),
        array_sum($ns[$e]) / count($ns[$e]) / 1000,
        in_array($e, ['none', 'none+ext', 'store+ext'], true) ? '' : sprintf('%.2fx', $median($ns[$e]) / $median($ns['apcng'])), $rps[$e],
        100 * $rps[$e] / $rps[$noneOf($e)], path($noneOf($e)));
}
printf("\nno metrics: %.0f req/s on the FFI php-fpm (/none), %.0f on the extension's (/ext/none)\n", $rps['none'],
    $rps['none+ext']);
printf("the floor, a userland no-op API of the same shape: %.1f%% of /none, %.1f%% of /ext/none; "
    . "native+ext reaches %.1f%% of /ext/none, %.1f%% of the floor's req/s\n",
    100 * $rps['noop'] / $rps['none'], 100 * $rps['noop+ext'] / $rps['none+ext'],
    100 * $rps['native+ext'] / $rps['none+ext'], 100 * $rps['native+ext'] / $rps['noop+ext']);
printf("the store alone (new Shmetrics\\Storage\\Shmetrics(), its replaced-store check): %.1f µs p50 in the request "
    . "(native+ext: %.1f, noop+ext: %.1f, /ext/none: %.1f), %.1f%% of /ext/none\n", $median($ns['store+ext']),
    $median($ns['native+ext']), $median($ns['noop+ext']), $median($ns['none+ext']),
    100 * $rps['store+ext'] / $rps['none+ext']);
printf("\nPromPHP on Redis takes %.1fx the native API's time per request (%.1fx on the extension), "
    . "%.1fx the adapter's (%.1fx)\n", $median($ns['redis']) / $median($ns['native']),
    $median($ns['redis']) / $median($ns['native+ext']), $median($ns['redis']) / $median($ns['adapter']),
    $median($ns['redis']) / $median($ns['adapter+ext']));
printf("\n(%d requests per engine one at a time, in turns of %d; req/s: median of %d runs of wrk -t2 -c8 -d%ds; "
    . "load average at the end: %s)\n", $rounds * $perTurn, $perTurn, $wrkRuns, $wrkSeconds,
    implode(' ', array_map(static fn (float $l): string => sprintf('%.2f', $l), sys_getloadavg())));
$log = (string) @file_get_contents("$dir/fpm.log") . (string) @file_get_contents("$dir/fpm-ext.log")
    . (string) @file_get_contents("$dir/php-errors.log");
if (preg_match('/PHP (Fatal|Warning)/', $log)) {
    fwrite(STDERR, "php-fpm logged errors:\n$log");
    exit(1);
}

/** The store must hold one count per request the native API and the adapter served. */
function check_counted(string $store, int $want): void
{
    require_once dirname(__DIR__, 2) . '/bindings/php/autoload.php';
    Shmetrics\Native::configure($GLOBALS['library']);
    foreach (Shmetrics\Snapshot::take(new Shmetrics\Storage\Shmetrics($store)) as $f) {
        if ($f['name'] === 'app_requests') {
            $got = (int) $f['series'][0]['value'];
            $got === $want || exit("the store counted $got requests, not $want\n");
            return;
        }
    }
    exit("the store has no app_requests\n");
}

/** @param array{int, int} $fpmPorts the FFI php-fpm's and the extension's */
function write_configs(string $dir, string $repo, string $library, string $extension, string $promphp,
    array $fpmPorts, int $nginxPort, int $redisPort): void
{
    $header = "$dir/shmetrics.h";
    file_put_contents($header, shell_exec(sprintf('%s %s %s', PHP_BINARY,
        escapeshellarg("$repo/bindings/php/bin/shmetrics-ffi-header"), escapeshellarg($library))));
    $user = posix_getpwuid(posix_geteuid())['name'];
    $preload = __DIR__ . '/fpm-preload.php';
    $ini = "ffi.enable = preload\nffi.preload = $header\nopcache.enable = 1\n"
        . "opcache.preload = $preload\nopcache.preload_user = $user\napc.enabled = 1\napc.shm_size = 256M\n";
    file_put_contents("$dir/php.ini", $ini);
    file_put_contents("$dir/php-ext.ini", "extension = $extension\nshmetrics.library = $library\n$ini");
    $root = posix_geteuid() === 0 ? "user = root\n" : '';
    foreach (['' => $fpmPorts[0], '-ext' => $fpmPorts[1]] as $v => $port) {
        file_put_contents("$dir/fpm$v.conf", "[global]\nerror_log = $dir/fpm$v.log\ndaemonize = no\n[bench$v]\n"
            . "listen = 127.0.0.1:$port\npm = static\npm.max_children = 2\ncatch_workers_output = yes\n"
            . "php_admin_value[error_log] = $dir/php-errors.log\nphp_admin_flag[log_errors] = on\n"
            . "env[SHMETRICS_STORE] = $dir/app.metrics\nenv[PROMPHP_DIR] = $promphp\nenv[REDIS_PORT] = $redisPort\n"
            . $root);
    }
    $app = __DIR__ . '/fpm-app.php';
    file_put_contents("$dir/nginx/nginx.conf", (posix_geteuid() === 0 ? "user root;\n" : '')
        . "worker_processes 1;\nerror_log $dir/nginx/error.log;\npid $dir/nginx/nginx.pid;\n"
        . "events { worker_connections 512; }\nhttp {\n access_log off;\n client_body_temp_path $dir/nginx/body;\n"
        . " fastcgi_temp_path $dir/nginx/fastcgi;\n proxy_temp_path $dir/nginx/proxy;\n"
        . " uwsgi_temp_path $dir/nginx/uwsgi;\n scgi_temp_path $dir/nginx/scgi;\n"
        . " upstream fpm { server 127.0.0.1:$fpmPorts[0]; keepalive 8; }\n"
        . " upstream fpm_ext { server 127.0.0.1:$fpmPorts[1]; keepalive 8; }\n"
        . " server {\n  listen 127.0.0.1:$nginxPort;\n"
        . "  location / {\n   include /etc/nginx/fastcgi_params;\n"
        . "   fastcgi_param SCRIPT_FILENAME $app;\n   fastcgi_keep_conn on;\n   fastcgi_pass fpm;\n  }\n"
        . "  location /ext/ {\n   include /etc/nginx/fastcgi_params;\n"
        . "   fastcgi_param SCRIPT_FILENAME $app;\n   fastcgi_keep_conn on;\n   fastcgi_pass fpm_ext;\n  }\n"
        . " }\n}\n");
}

/** @param list<string> $argv @return resource */
function start(array $argv, string $log)
{
    $p = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes);
    is_resource($p) || exit('cannot start ' . implode(' ', $argv) . "\n");
    return $p;
}

function wait_for(string $url, string $dir): void
{
    for ($i = 0; $i < 100; $i++) {
        if (@file_get_contents($url) !== false) {
            return;
        }
        usleep(100000);
    }
    exit("php-fpm behind nginx did not answer $url; see $dir/fpm.log, $dir/fpm.out, $dir/nginx.out\n");
}

function get(string $url): string
{
    $body = file_get_contents($url);
    ($body !== false && is_numeric($body)) || exit("$url answered: " . var_export($body, true) . "\n");
    return $body;
}

function free_port(): int
{
    $s = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
    fclose($s);
    return $port;
}
