<?php

// shmetrics from PHP, in the shape of PromPHP's APCng performance table,
// side by side with PromPHP's APCng measured in the same run.
//
//     php benches/php/bench.php [--quick] [--calls]
//
// (It re-runs itself with apc.enable_cli=1, a large enough apc.shm_size and
// opcache on, as php-fpm has it, unless BENCH_CHILD is set.) PromPHP comes
// from $PROMPHP_DIR, else ../shared/peers/promphp-v2.15.1 next to the
// repository (Packagist is not reachable here); without it, only the
// native API is measured.
//
// Table 1: rows are 1k, 10k, 100k and 1M unrelated keys in APCu (php-apcu)
// x 50, 500 and 2,500 metrics of each type (PromPHP's TestEngineSpeed
// shape: that many counters, gauges, histograms with default buckets and
// summaries, without labels), for three engines: the native Shmetrics\
// API, PromPHP's classes on Shmetrics\PromPHP\ShmetricsAdapter, and
// PromPHP's classes on APCng. Columns are the time to create the metrics
// (getOrRegister, then one update each), to update each once more, to wipe
// the storage, and to collect (render the whole storage through
// RenderTextFormat), in ms. shmetrics never touches APCu: the keys are there
// to show that its figures do not depend on them; APCng's do.
//
// (--calls: table 2 only. --inapp: neither table, but the render inside
// the app for benches/inapp_render.sh, described at inapp() below.)
//
// Table 2: the cost of one call, in ns (loop overhead subtracted, best of
// 5 runs): Counter->inc() and Histogram->observe() through this package,
// through PromPHP on the adapter and on APCng, the same updates as bare FFI
// calls, and PHP's own cost of an FFI call (shmetrics_buf_len(NULL), which
// does nothing).
//
// Both tables are printed twice: with the package on PHP FFI, then with the
// shmetrics extension loaded ($SHMETRICS_EXTENSION, else
// target/php-ext/ext/modules/shmetrics.so, which `bindings/php/ext/build.sh
// target/php-ext` builds; skipped with a note when it is missing). The
// second run leaves out PromPHP's Redis adapter and the bare FFI calls,
// which the extension does not change; APCng runs in both, for same-run
// ratios. The library: $SHMETRICS_LIBRARY, else target/release/
// libshmetrics.so (`cargo build --release -p shmetrics-ffi`).

declare(strict_types=1);

$quick = in_array('--quick', $argv, true);
$callsOnly = in_array('--calls', $argv, true);
$inapp = in_array('--inapp', $argv, true);

if (getenv('BENCH_CHILD') === false) {
    $cmd = [PHP_BINARY, '-d', 'apc.enable_cli=1', '-d', 'apc.shm_size=2048M', '-d', 'opcache.enable_cli=1',
        '-d', 'ffi.enable=1'];
    $args = [__FILE__, ...array_slice($argv, 1)];
    $extension = getenv('SHMETRICS_EXTENSION') ?: dirname(__DIR__, 2) . '/target/php-ext/ext/modules/shmetrics.so';
    // The library this checkout built, as fpm.php and instructions.php take it.
    $library = getenv('SHMETRICS_LIBRARY') ?: dirname(__DIR__, 2) . '/target/release/libshmetrics.so';
    // The children's output goes through this process, in order (two
    // children given STDOUT itself overwrote each other in a file). Their
    // stdin and stderr are this process's, inherited: given as STDIN and
    // STDERR, proc_open seeks the descriptor to the stream's position, which
    // under `> file 2>&1` moved the shared offset back to 0.
    $child = static function (array $argv, string $mode) use ($library): int {
        $p = proc_open($argv, [1 => ['pipe', 'w']], $pipes, null,
            ['BENCH_CHILD' => $mode, 'SHMETRICS_LIBRARY' => $library] + getenv());
        while (($chunk = fread($pipes[1], 8192)) !== false && $chunk !== '') {
            fwrite(STDOUT, $chunk);
        }
        fclose($pipes[1]);
        return proc_close($p);
    };
    $rc = $child([...$cmd, ...$args], 'ffi');
    if ($rc !== 0) {
        exit($rc);
    }
    if (!is_file($extension)) {
        exit("\n$extension is missing (bindings/php/ext/build.sh target/php-ext): the extension is not measured\n");
    }
    printf("\n==== the same with the shmetrics extension (%s) ====\n\n", $extension);
    exit($child([...$cmd, '-d', "extension=$extension", ...$args], 'ext'));
}
define('EXT', getenv('BENCH_CHILD') === 'ext');
if (EXT !== extension_loaded('shmetrics')) {
    exit("the shmetrics extension is loaded by PHP's own ini: the FFI figures would be the extension's\n");
}

require dirname(__DIR__, 2) . '/bindings/php/autoload.php';
require __DIR__ . '/promphp.php';

use Shmetrics\CollectorRegistry;
use Shmetrics\Native;
use Shmetrics\PromPHP\ShmetricsAdapter;
use Shmetrics\RenderTextFormat;
use Shmetrics\Storage\Shmetrics;

$promphp = promphp_autoload();
$keyCounts = $callsOnly ? [] : ($quick ? [1000, 100000] : [1000, 10000, 100000, 1000000]);
$metricCounts = [50, 500, 2500];
$calls = $quick ? 200000 : 1000000;

$dir = (is_dir('/dev/shm') ? '/dev/shm' : sys_get_temp_dir()) . '/shmetrics-php-bench-' . getmypid();
mkdir($dir, 0700);
$owner = getmypid();
register_shutdown_function(static function () use ($dir, $owner): void {
    if (getmypid() !== $owner) {
        return; // a writer forked by inapp()
    }
    foreach (glob("$dir/*") ?: [] as $f) {
        unlink($f);
    }
    @rmdir($dir);
});

define('REDIS_PORT', $promphp === null || EXT || $inapp ? null : start_redis($dir));
$apcu = function_exists('apcu_enabled') && apcu_enabled();
printf("shmetrics %s, PHP %s (%s), opcache %s, JIT %s, APCu %s%s\n", Native::version(), PHP_VERSION, PHP_OS,
    ini_get('opcache.enable_cli') ? 'on' : 'off',
    (function_exists('opcache_get_status') && (opcache_get_status(false)['jit']['on'] ?? false)) ? 'on' : 'off',
    $apcu ? 'on' : 'NOT AVAILABLE (install php-apcu; the key counts below are then not present)',
    $quick ? ', --quick' : '');
printf("%s\n", REDIS_PORT === null
    ? (EXT ? 'PromPHP\'s Redis adapter: see the FFI run' : 'PromPHP\'s Redis adapter not measured (needs redis-server and php-redis)')
    : 'PromPHP\'s Redis adapter on a local redis-server (127.0.0.1:' . REDIS_PORT . ', no persistence)');
printf("%s\n\n", $promphp === null
    ? 'PromPHP not found (set PROMPHP_DIR): the adapter and APCng are not measured'
    : "PromPHP from $promphp");

/**
 * Starts a local redis-server (no persistence) for PromPHP's Redis
 * adapter, stopped when the bench ends; null without redis-server or
 * php-redis.
 */
function start_redis(string $dir): ?int
{
    if (!extension_loaded('redis') || !is_executable('/usr/bin/redis-server')) {
        return null;
    }
    $s = stream_socket_server('tcp://127.0.0.1:0');
    $port = (int) substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
    fclose($s);
    $p = proc_open(['/usr/bin/redis-server', '--port', (string) $port, '--bind', '127.0.0.1', '--save', '',
        '--appendonly', 'no', '--dir', $dir], [0 => ['file', '/dev/null', 'r'], 1 => ['file', "$dir/redis.log", 'a'],
        2 => ['file', "$dir/redis.log", 'a']], $pipes);
    register_shutdown_function(static function () use ($p): void {
        posix_kill(proc_get_status($p)['pid'], SIGTERM);
        proc_close($p);
    });
    for ($i = 0; $i < 100; $i++) {
        $c = @fsockopen('127.0.0.1', $port);
        if ($c !== false) {
            fclose($c);
            return $port;
        }
        usleep(50000);
    }
    fwrite(STDERR, "redis-server did not start; see $dir/redis.log\n");
    exit(1);
}

/**
 * A store for $n metrics of each type. A summary series takes 5 x 4,245
 * sketch cells per writer, and its metric's overflow series as many once
 * used: a default store holds 790 such series, so this one is sized for
 * $n summaries and an overflow series each (sparse: address space, not
 * memory).
 */
function bench_store(string $path, int $n): Shmetrics
{
    return new Shmetrics($path, [
        'max_families' => 4 * $n + 64, 'max_writers' => 2, 'sketch_cells_per_writer' => 2 * 5 * 4245 * ($n + 1),
    ]);
}

/**
 * The engines of table 1: each makes a registry (PromPHP's or the native
 * one) on fresh storage for $n metrics of each type.
 *
 * @return array<string, callable(int): object>
 */
function engines(string $dir, ?string $promphp): array
{
    $run = 0;
    $engines = [
        'shmetrics' => static function (int $n) use ($dir, &$run): object {
            return new CollectorRegistry(bench_store("$dir/store" . $run++, $n), false);
        },
    ];
    if ($promphp !== null) {
        $engines['PromPHP+adapter'] = static function (int $n) use ($dir, &$run): object {
            return new Prometheus\CollectorRegistry(new ShmetricsAdapter(bench_store("$dir/store" . $run++, $n)), false);
        };
        if (function_exists('apcu_enabled') && apcu_enabled()) {
            $engines['PromPHP+APCng'] = static fn (int $n): object
                => new Prometheus\CollectorRegistry(new Prometheus\Storage\APCng(), false);
        }
        if (REDIS_PORT !== null) {
            $engines['PromPHP+Redis'] = static fn (int $n): object => new Prometheus\CollectorRegistry(
                new Prometheus\Storage\Redis(['host' => '127.0.0.1', 'port' => REDIS_PORT]),
                false
            );
        }
    }
    return $engines;
}

/**
 * PromPHP's TestEngineSpeed on $registry: $n metrics of each type created
 * and updated, updated again, collected, wiped. Returns the four times in
 * ns and the number of families collected.
 *
 * @return array{int, int, int, int, int}
 */
function speed(object $registry, int $n): array
{
    $t0 = hrtime(true);
    $metrics = [];
    for ($i = 0; $i < $n; $i++) {
        $metrics[] = $registry->getOrRegisterCounter('ns', "counter$i", 'counter help');
        $metrics[] = $registry->getOrRegisterGauge('ns', "gauge$i", 'gauge help');
        $metrics[] = $registry->getOrRegisterHistogram('ns', "histogram$i", 'histogram help');
        $metrics[] = $registry->getOrRegisterSummary('ns', "summary$i", 'summary help');
        update_all(array_slice($metrics, -4));
    }
    $t1 = hrtime(true);
    update_all($metrics);
    $t2 = hrtime(true);
    $samples = $registry->getMetricFamilySamples();
    $renderer = $registry instanceof CollectorRegistry ? new RenderTextFormat() : new Prometheus\RenderTextFormat();
    $text = $renderer->render($samples);
    $t3 = hrtime(true);
    $registry->wipeStorage();
    $t4 = hrtime(true);
    return [$t1 - $t0, $t2 - $t1, $t4 - $t3, $t3 - $t2, substr_count($text, '# TYPE ')];
}

/** @param list<object> $metrics counters, gauges, histograms, summaries in turn */
function update_all(array $metrics): void
{
    foreach ($metrics as $i => $m) {
        match ($i % 4) {
            0, 1 => $m->inc(),
            2, 3 => $m->observe(1),
        };
    }
}

/**
 * The render inside the app (benches/inapp_render.sh): $series series in
 * families of 8 label sets (route, code), one family in ten a histogram
 * with PromPHP's default buckets observing 0.3, the others counters,
 * written by $writers forked processes (each through PromPHP's
 * CollectorRegistry on its own adapter, as php-fpm workers do, every
 * series once), on ShmetricsAdapter and on APCng (whose APCu memory the
 * forks share). Then this process times $k renders of
 * `(new Prometheus\RenderTextFormat())->render($registry->getMetricFamilySamples())`
 * on a fresh registry and checks the page (each counter and each
 * histogram's `_count` = $writers). Prints the medians and
 * `inapp php-ffi|php-ext MS_SHMETRICS MS_APCNG`.
 */
function inapp(string $dir, int $series, int $writers, int $k): void
{
    if (!function_exists('pcntl_fork') || !function_exists('apcu_enabled') || !apcu_enabled()) {
        exit("--inapp needs pcntl and APCu (php-apcu)\n");
    }
    $adapters = [
        'shmetrics' => static fn (): object => new ShmetricsAdapter(new Shmetrics("$dir/inapp.shm", [
            'max_series' => 2 * $series + 1024, 'max_families' => intdiv($series, 8) + 64, 'max_writers' => 2 * $writers,
        ])),
        'APCng' => static fn (): object => new Prometheus\Storage\APCng(),
    ];
    $ms = [];
    foreach ($adapters as $name => $make) {
        $pids = [];
        for ($w = 0; $w < $writers; $w++) {
            $pid = pcntl_fork();
            if ($pid === 0) {
                inapp_write(new Prometheus\CollectorRegistry($make(), false), $series);
                exit(0);
            }
            $pids[] = $pid;
        }
        foreach ($pids as $pid) {
            pcntl_waitpid($pid, $status);
            if (!pcntl_wifexited($status) || pcntl_wexitstatus($status) !== 0) {
                exit("a $name writer failed\n");
            }
        }
        $registry = new Prometheus\CollectorRegistry($make(), false);
        $render = static fn (): string
            => (new Prometheus\RenderTextFormat())->render($registry->getMetricFamilySamples());
        $page = $render();
        $good = preg_match_all('/^app_f\d+_(?:total|seconds_count)\{[^}]*\} ' . $writers . '$/m', $page);
        if ($good !== $series && $name === 'shmetrics') {
            exit("$name: the page has $good series of $writers, not $series\n");
        }
        if ($good !== $series) {
            // APCng's own races between processes: reported, not fatal.
            printf("(%s: %d of %d series reached %d: updates lost between the writers)\n", $name, $good, $series, $writers);
        }
        $times = [];
        for ($i = 0; $i < $k; $i++) {
            $t = hrtime(true);
            $render();
            $times[] = (hrtime(true) - $t) / 1e6;
        }
        sort($times);
        $ms[$name] = $times[intdiv($k, 2)];
        $registry->wipeStorage();
    }
    $mode = EXT ? 'php-ext' : 'php-ffi';
    printf("in-app render (%s), median of %d (ms), %d series x %d writers: ShmetricsAdapter %.2f, APCng %.2f (%.2fx)\n",
        EXT ? 'extension' : 'FFI', $k, $series, $writers, $ms['shmetrics'], $ms['APCng'], $ms['APCng'] / $ms['shmetrics']);
    printf("inapp %s %.3f %.3f\n", $mode, $ms['shmetrics'], $ms['APCng']);
}

/** One writer of inapp(): every series of the shape once, through PromPHP's classes. */
function inapp_write(Prometheus\CollectorRegistry $registry, int $series): void
{
    for ($f = 0; $f < intdiv($series, 8); $f++) {
        $m = $f % 10 === 9
            ? $registry->getOrRegisterHistogram('app', "f{$f}_seconds", 'Latency.', ['route', 'code'])
            : $registry->getOrRegisterCounter('app', "f{$f}_total", 'Requests.', ['route', 'code']);
        for ($j = 0; $j < 8; $j++) {
            $labels = ['/r/' . intdiv($j, 2), $j % 2 === 0 ? '200' : '500'];
            $f % 10 === 9 ? $m->observe(0.3, $labels) : $m->inc($labels);
        }
    }
}

if ($inapp) {
    if ($promphp === null) {
        exit("--inapp needs PromPHP (set PROMPHP_DIR)\n");
    }
    inapp($dir, (int) (getenv('INAPP_SERIES') ?: 10000), (int) (getenv('INAPP_WRITERS') ?: 16),
        (int) (getenv('INAPP_K') ?: 5));
    exit(0);
}

$ms = static fn (int $ns): string => sprintf('%.1f', $ns / 1e6);
$row = static function (array $cells): void {
    printf("%-44s %11s %14s %9s %12s\n", ...$cells);
};
if ($keyCounts !== []) {
    $row(['Configuration (metrics of each type)', 'Create (ms)', 'Increment (ms)', 'Wipe (ms)', 'Collect (ms)']);
}
$engines = engines($dir, $promphp);
$keysPresent = 0;
foreach ($keyCounts as $keys) {
    if ($apcu) {
        for (; $keysPresent < $keys; $keysPresent++) {
            apcu_store("unrelated:$keysPresent", $keysPresent);
        }
        $have = apcu_cache_info(true)['num_entries'];
        if ($have < $keys) {
            fprintf(STDERR, "APCu holds only %d keys; raise apc.shm_size\n", $have);
        }
    }
    $k = $keys >= 1000000 ? ($keys / 1000000) . 'M' : ($keys / 1000) . 'k';
    foreach ($metricCounts as $n) {
        foreach ($engines as $name => $make) {
            [$create, $inc, $wipe, $collect, $families] = speed($make($n), $n);
            // php_info is not registered; 4 families per metric index. A
            // store that loses one is a bug; APCng's losses are reported.
            $lost = $families === 4 * $n ? '' : sprintf(' (collected %d of %d metrics)', $families, 4 * $n);
            if ($lost !== '' && !str_contains($name, 'APCng')) {
                fprintf(STDERR, "%s%s\n", $name, $lost);
                exit(1);
            }
            $row(["$name $k keys / $n", $ms($create), $ms($inc), $ms($wipe), $ms($collect) . $lost]);
        }
    }
}

// ---- Table 2: one call --------------------------------------------------

$registry = new CollectorRegistry(new Shmetrics("$dir/calls"), false);
$plain = $registry->registerCounter('bench', 'plain', 'No labels.');
$labelled = $registry->registerCounter('bench', 'labelled', 'Two labels.', ['route', 'status']);
$hist = $registry->registerHistogram('bench', 'seconds', 'Default buckets, one label.', ['route']);
$storage = $registry->getStorage();
$plain->inc();  // so that the library has cached its series

/**
 * Table 2's rows for bare FFI calls (none on the extension, whose objects
 * hold no FFI handle): shmetrics_update() as Counter->inc() makes it, and
 * two calls that do nothing, for PHP's own cost of an FFI call.
 *
 * @return list<array{string, string, callable(int): void, ?int}>
 */
function ffi_cases(Shmetrics $storage, object $plain): array
{
    if (EXT) {
        return [];
    }
    $ffi = Native::ffi();
    $st = $storage->store;
    $token = (function (): int {
        return $this->family;
    })->call($plain);
    return [
        ['FFI shmetrics_update()', 'no class', static function (int $n) use ($ffi, $st, $token): void {
            for ($i = 0; $i < $n; $i++) {
                $ffi->shmetrics_update($st, $token, Native::OP_COUNTER_ADD, '', 0, 1.0);
            }
        }, null],
        ['FFI shmetrics_buf_len(NULL)', 'bare FFI call', static function (int $n) use ($ffi): void {
            for ($i = 0; $i < $n; $i++) {
                $ffi->shmetrics_buf_len(null);
            }
        }, null],
        ['FFI shmetrics_version()', 'returns a string', static function (int $n) use ($ffi): void {
            for ($i = 0; $i < $n; $i++) {
                $ffi->shmetrics_version();
            }
        }, null],
    ];
}

/**
 * Table 2's rows for PromPHP's Counter->inc() and Histogram->observe() on
 * ShmetricsAdapter and on APCng; none without PromPHP.
 *
 * @return list<array{string, string, callable(int): void, ?int}>
 */
function promphp_cases(Shmetrics $storage): array
{
    if (!class_exists(Prometheus\CollectorRegistry::class)) {
        return [];
    }
    $adapters = ['ShmetricsAdapter' => new ShmetricsAdapter($storage)];
    if (function_exists('apcu_enabled') && apcu_enabled()) {
        $adapters['APCng'] = new Prometheus\Storage\APCng();
    }
    if (REDIS_PORT !== null) {
        $adapters['Redis'] = new Prometheus\Storage\Redis(['host' => '127.0.0.1', 'port' => REDIS_PORT]);
    }
    $cases = [];
    foreach ($adapters as $name => $adapter) {
        $registry = new Prometheus\CollectorRegistry($adapter, false);
        $c = $registry->getOrRegisterCounter('promphp', 'labelled', 'Two labels.', ['route', 'status']);
        $h = $registry->getOrRegisterHistogram('promphp', 'seconds', 'Default buckets.', ['route']);
        $cases[] = ["PromPHP Counter->inc([2 labels])", "on $name", static function (int $n) use ($c): void {
            $l = ['/users', '200'];
            for ($i = 0; $i < $n; $i++) {
                $c->inc($l);
            }
        }, null];
        $cases[] = ["PromPHP Histogram->observe(0.3, [1])", "on $name", static function (int $n) use ($h): void {
            $l = ['/users'];
            for ($i = 0; $i < $n; $i++) {
                $h->observe(0.3, $l);
            }
        }, null];
    }
    return $cases;
}

/** Best of 5 runs of $body($calls), minus an empty loop, per call. */
function per_call(callable $body, int $calls): float
{
    $best = PHP_INT_MAX;
    for ($r = 0; $r < 5; $r++) {
        $t = hrtime(true);
        $body($calls);
        $best = min($best, hrtime(true) - $t);
    }
    return $best / $calls;
}

$empty = per_call(static function (int $n): void {
    for ($i = 0; $i < $n; $i++) {
    }
}, $calls);
$cases = [
    ['Counter->inc()', 'no labels', static function (int $n) use ($plain): void {
        for ($i = 0; $i < $n; $i++) {
            $plain->inc();
        }
    }, 150],
    ['Counter->inc([route, status])', '2 labels', static function (int $n) use ($labelled): void {
        $l = ['/users', '200'];
        for ($i = 0; $i < $n; $i++) {
            $labelled->inc($l);
        }
    }, 150],
    ['Histogram->observe(0.3, [route])', '15 buckets', static function (int $n) use ($hist): void {
        $l = ['/users'];
        for ($i = 0; $i < $n; $i++) {
            $hist->observe(0.3, $l);
        }
    }, 200],
    ...promphp_cases($storage),
    ...ffi_cases($storage, $plain),
    ['PHP method call (empty body)', 'for scale', static function (int $n) use ($labelled): void {
        $l = ['/users', '200'];
        for ($i = 0; $i < $n; $i++) {
            $labelled->getLabelNames();
        }
    }, null],
];
printf("\n%-38s %-20s %10s %10s\n", 'One call', '', 'ns/call', 'target');
foreach ($cases as [$name, $note, $body, $target]) {
    // A call to Redis is a round trip, ~1,000x the others: 1/100 as many.
    $ns = per_call($body, str_contains($note, 'Redis') ? intdiv($calls, 100) : $calls) - $empty;
    printf("%-38s %-20s %10.0f %10s\n", $name, $note, $ns, $target === null ? '' : "<= $target" . ($ns <= $target ? '' : ' MISSED'));
}
$counted = $storage->stats();
printf("(%d calls per measurement, %d on Redis, best of 5; %d writer slot claimed)\n", $calls, intdiv($calls, 100), $counted['writer_claims_total']);
