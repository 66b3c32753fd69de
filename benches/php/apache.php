<?php

// Per request in a real Apache httpd (Debian's apache2, prefork MPM) with
// mod_php (libapache2-mod-php8.2): the endpoint shape of issue 17 (a fresh
// registry, 4 getOrRegister, 5 updates; fpm-app.php, preloaded by
// fpm-preload.php) with no metrics ("none"), on PromPHP with APCng
// ("apcng", APCu's shared memory in Apache's parent, as mod_php has always
// had it), on the native Shmetrics\ API and on PromPHP with
// ShmetricsAdapter on PHP FFI ("native", "adapter"), and the same on the
// shmetrics extension ("+ext"), in the same run. Two Apaches, each with 8
// children (KeepAlive on), with docs/php.md's preloaded setup
// (ffi.enable=preload, ffi.preload, opcache.preload); the second also loads
// the extension ($SHMETRICS_EXTENSION, else target/php-ext/ext/modules/
// shmetrics.so: `bindings/php/ext/build.sh target/php-ext`).
//
//     php benches/php/apache.php [--quick]
//
// Prints, per engine: the time the metrics took inside the request (median
// of hrtime around the shape, in µs, over requests sent one at a time, the
// engines taking turns), Apache's requests per second with wrk (2 threads,
// 8 connections, 3 s; the median of 5 runs, the engines taking turns), and
// that as a share of the same endpoint without metrics on the same Apache.
// Needs apache2, libapache2-mod-php8.2, php-apcu, wrk (scripts/setup.sh's
// ensure_php and ensure_lua), PromPHP ($PROMPHP_DIR or the pinned copy), and
// the shmetrics command ($SHMETRICS_BIN, else target/debug/shmetrics) to
// check that every request was counted.

declare(strict_types=1);

require __DIR__ . '/promphp.php';

const ENGINES = ['none', 'apcng', 'native', 'adapter', 'none+ext', 'native+ext', 'adapter+ext'];

$quick = in_array('--quick', $argv, true);
$rounds = $quick ? 10 : 40;
$perTurn = 50;
$wrkSeconds = $quick ? 2 : 3;
$wrkRuns = $quick ? 3 : 5;

$promphp = promphp_autoload() ?? exit("PromPHP not found: set PROMPHP_DIR\n");
$repo = dirname(__DIR__, 2);
$library = realpath(getenv('SHMETRICS_LIBRARY') ?: "$repo/target/release/libshmetrics.so");
$extension = getenv('SHMETRICS_EXTENSION') ?: "$repo/target/php-ext/ext/modules/shmetrics.so";
foreach (['/usr/sbin/apache2', '/usr/lib/apache2/modules/libphp8.2.so', '/usr/bin/wrk', $library, $extension] as $need) {
    ($need !== false && is_file($need)) || exit("$need is missing\n");
}
$bin = getenv('SHMETRICS_BIN') ?: "$repo/target/debug/shmetrics";
is_executable($bin) || exit("$bin is missing: cargo build -p shmetrics, or set SHMETRICS_BIN\n");

$dir = (is_dir('/dev/shm') ? '/dev/shm' : sys_get_temp_dir()) . '/shmetrics-apache-bench-' . getmypid();
mkdir($dir, 0755, true);
chmod($dir, 0755);
$root = posix_geteuid() === 0;
// Apache runs its children as www-data when started as root.
$user = $root ? 'www-data' : posix_getpwuid(posix_geteuid())['name'];
$root && chown($dir, $user);
$store = "$dir/app.metrics";
$procs = [];
register_shutdown_function(static function () use (&$procs, $dir): void {
    foreach (array_reverse($procs) as $p) {
        posix_kill(proc_get_status($p)['pid'], SIGTERM);
        proc_close($p);
    }
    exec('rm -rf ' . escapeshellarg($dir));
});

$header = "$dir/shmetrics.h";
file_put_contents($header, shell_exec(sprintf('%s %s %s', PHP_BINARY,
    escapeshellarg("$repo/bindings/php/bin/shmetrics-ffi-header"), escapeshellarg($library))));
$ini = "ffi.enable = preload\nffi.preload = $header\nopcache.enable = 1\n"
    . "opcache.preload = " . __DIR__ . "/fpm-preload.php\nopcache.preload_user = $user\n"
    . "apc.enabled = 1\napc.shm_size = 256M\nerror_log = $dir/php-errors.log\nlog_errors = on\n";
$ports = [];
foreach (['', '-ext'] as $v) {
    mkdir("$dir/php$v");
    file_put_contents("$dir/php$v/php.ini", $ini . ($v ? "extension = $extension\nshmetrics.library = $library\n" : ''));
    $ports[$v] = free_port();
    $app = __DIR__;
    file_put_contents("$dir/apache$v.conf", <<<CONF
        ServerRoot /etc/apache2
        ServerName 127.0.0.1
        Listen 127.0.0.1:{$ports[$v]}
        PidFile $dir/apache$v.pid
        DefaultRuntimeDir $dir
        Mutex file:$dir default
        ErrorLog $dir/apache$v-error.log
        User $user
        Group $user
        LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so
        LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
        LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so
        LoadModule env_module /usr/lib/apache2/modules/mod_env.so
        LoadModule php_module /usr/lib/apache2/modules/libphp8.2.so
        PHPIniDir $dir/php$v
        KeepAlive On
        MaxKeepAliveRequests 0
        StartServers 8
        MinSpareServers 8
        MaxSpareServers 8
        MaxRequestWorkers 8
        ServerLimit 8
        MaxConnectionsPerChild 0
        AliasMatch "^/(ext/)?[a-z]+$" "$app/fpm-app.php"
        <Directory $app>
            Require all granted
            SetHandler application/x-httpd-php
        </Directory>
        SetEnv SHMETRICS_STORE $store

        CONF);
    // setsid: prefork's parent signals its process group on stop.
    $procs[] = start(['setsid', '/usr/sbin/apache2', '-f', "$dir/apache$v.conf", '-DFOREGROUND'], "$dir/apache$v.out",
        ['PATH' => (string) getenv('PATH'), 'PROMPHP_DIR' => $promphp]);
}
/** The URL of $engine's endpoint: the extension's Apache for "+ext" engines. */
function url(string $engine): string
{
    global $ports;
    return str_ends_with($engine, '+ext')
        ? "http://127.0.0.1:{$ports['-ext']}/ext/" . substr($engine, 0, -4)
        : "http://127.0.0.1:{$ports['']}/$engine";
}
wait_for(url('none'), $dir);
wait_for(url('none+ext'), $dir);

printf("PHP %s, Apache prefork + mod_php (8 children, KeepAlive, ffi.enable=preload, opcache.preload); PromPHP from %s\n",
    PHP_VERSION, $promphp);
printf("+ext: a second Apache, the same but with extension=%s\n", $extension);
printf("endpoint: fresh registry + 4 getOrRegister + 5 updates (benches/php/fpm-app.php); load average: %s\n\n",
    implode(' ', array_map(static fn (float $l): string => sprintf('%.2f', $l), sys_getloadavg())));

foreach (ENGINES as $e) {
    for ($i = 0; $i < 40; $i++) {  // every child, every engine: store opened, slot claimed, opcache warm
        get(url($e));
    }
}
$ns = array_fill_keys(ENGINES, []);
for ($r = 0; $r < $rounds; $r++) {
    foreach (ENGINES as $e) {
        for ($i = 0; $i < $perTurn; $i++) {
            $ns[$e][] = (int) get(url($e));
        }
    }
}
// Every request of the four shmetrics engines counted once.
$want = 4 * (40 + $rounds * $perTurn);
// (The children created the store: read it as their user, which it trusts.)
$dump = shell_exec(($root ? "runuser -u $user -- " : '') . escapeshellarg($bin) . ' dump --store ' . escapeshellarg($store));
$got = preg_match('/^app_requests\{[^}]*\} (\d+)$/m', (string) $dump, $m) ? (int) $m[1] : -1;
$got === $want || exit("the store counted $got requests, not $want\n");

$runs = array_fill_keys(ENGINES, []);
for ($r = 0; $r < $wrkRuns; $r++) {
    foreach (ENGINES as $e) {
        $out = shell_exec(sprintf('wrk -t2 -c8 -d%ds %s 2>&1', $wrkSeconds, escapeshellarg(url($e))));
        $runs[$e][] = preg_match('/Requests\/sec:\s+([\d.]+)/', (string) $out, $m) ? (float) $m[1] : NAN;
        if (preg_match('/Non-2xx or 3xx responses: (\d+)/', (string) $out, $m)) {
            exit("$e: {$m[1]} failed responses under wrk\n");
        }
    }
}
$median = static function (array $v): float {
    sort($v);
    return $v[intdiv(count($v), 2)];
};
printf("%-12s %18s %14s %12s %16s  %s\n", 'engine', 'in request µs p50', 'vs APCng p50', 'req/s', 'vs no metrics', 'of');
foreach (ENGINES as $e) {
    $none = str_ends_with($e, '+ext') ? 'none+ext' : 'none';
    printf("%-12s %18.1f %14s %12.0f %15.1f%%  %s\n", $e, $median($ns[$e]) / 1000,
        str_starts_with($e, 'none') ? '' : sprintf('%.2fx', $median($ns[$e]) / $median($ns['apcng'])),
        $median($runs[$e]), 100 * $median($runs[$e]) / $median($runs[$none]), $none);
}
printf("\n(%d requests per engine one at a time, in turns of %d; req/s: median of %d runs of wrk -t2 -c8 -d%ds; "
    . "load average at the end: %s)\n", $rounds * $perTurn, $perTurn, $wrkRuns, $wrkSeconds,
    implode(' ', array_map(static fn (float $l): string => sprintf('%.2f', $l), sys_getloadavg())));
$log = (string) @file_get_contents("$dir/php-errors.log") . (string) @file_get_contents("$dir/apache-error.log")
    . (string) @file_get_contents("$dir/apache-ext-error.log");
if (preg_match('/PHP (Fatal|Warning)/', $log)) {
    fwrite(STDERR, "Apache logged errors:\n$log");
    exit(1);
}

/** @param list<string> $argv @param array<string, string> $env @return resource */
function start(array $argv, string $log, array $env)
{
    $p = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes, null, $env);
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
    exit("Apache did not answer $url; see $dir/apache*.log, $dir/apache*.out\n");
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
