<?php

// shmetrics from PHP, in the shape of PromPHP's APCng performance table.
//
//     php benches/php/bench.php [--quick]
//
// (It re-runs itself with apc.enable_cli=1, a large enough apc.shm_size and
// opcache on, as php-fpm has it, unless BENCH_CHILD is set.)
//
// Table 1: rows are 1k, 10k, 100k and 1M unrelated keys in APCu (php-apcu)
// x 50, 500 and 2,500 metrics; columns are the time to create the metrics
// (register, then the first update of each label set), to increment every
// series once, to wipe the store, and to collect (render the whole store
// through RenderTextFormat), in ms. A quarter of the metrics are each of
// counter, gauge, histogram (default buckets) and summary, each with 3
// label sets. shmetrics never touches APCu: the keys are there to show
// that the figures do not depend on them. The last column repeats APCng's
// collect time from PromPHP's README.APCng.md, for comparison: PromPHP
// itself cannot be installed here (no Packagist), so it is not measured.
//
// Table 2: the cost of one call, in ns (loop overhead subtracted, best of
// 5 runs): Counter->inc() and Histogram->observe() through this package,
// the same updates as bare FFI calls, and PHP's own cost of an FFI call
// (shmetrics_buf_len(NULL), which does nothing).

declare(strict_types=1);

$quick = in_array('--quick', $argv, true);

if (getenv('BENCH_CHILD') === false) {
    $cmd = [PHP_BINARY, '-d', 'apc.enable_cli=1', '-d', 'apc.shm_size=1024M', '-d', 'opcache.enable_cli=1',
        '-d', 'ffi.enable=1', __FILE__, ...array_slice($argv, 1)];
    $p = proc_open($cmd, [STDIN, STDOUT, STDERR], $pipes, null, ['BENCH_CHILD' => '1'] + getenv());
    exit(proc_close($p));
}

require dirname(__DIR__, 2) . '/bindings/php/autoload.php';

use Shmetrics\CollectorRegistry;
use Shmetrics\Native;
use Shmetrics\RenderTextFormat;
use Shmetrics\Storage\Shmetrics;

const LABEL_SETS = 3;
const TYPES = ['counter', 'gauge', 'histogram', 'summary'];
// APCng's collect (ms) from PromPHP's README.APCng.md; null where it has none.
const APCNG_COLLECT = [
    1000 => [50 => 11.1, 500 => 108.3, 2500 => null],
    10000 => [50 => 15.2, 500 => 118.6, 2500 => 978.8],
    100000 => [50 => 69.7, 500 => 603.9, 2500 => 4092.4],
    1000000 => [50 => 100.4, 500 => 904.2, 2500 => 5396.4],
];

$keyCounts = $quick ? [1000, 100000] : [1000, 10000, 100000, 1000000];
$metricCounts = [50, 500, 2500];
$calls = $quick ? 200000 : 1000000;

$dir = (is_dir('/dev/shm') ? '/dev/shm' : sys_get_temp_dir()) . '/shmetrics-php-bench-' . getmypid();
mkdir($dir, 0700);
register_shutdown_function(static function () use ($dir): void {
    foreach (glob("$dir/*") ?: [] as $f) {
        unlink($f);
    }
    @rmdir($dir);
});

$apcu = function_exists('apcu_enabled') && apcu_enabled();
printf("shmetrics %s, PHP %s (%s), opcache %s, JIT %s, APCu %s%s\n", Native::version(), PHP_VERSION, PHP_OS,
    ini_get('opcache.enable_cli') ? 'on' : 'off',
    (function_exists('opcache_get_status') && (opcache_get_status(false)['jit']['on'] ?? false)) ? 'on' : 'off',
    $apcu ? 'on' : 'NOT AVAILABLE (install php-apcu; the key counts below are then not present)',
    $quick ? ', --quick' : '');
printf("PromPHP is not installed here (no Packagist): its APCng collect column is copied from its README.\n\n");

$ms = static fn (int $ns): string => sprintf('%.1f', $ns / 1e6);
$row = static function (array $cells): void {
    printf("%-36s %11s %14s %9s %12s %18s\n", ...$cells);
};
$row(['Configuration', 'Create (ms)', 'Increment (ms)', 'Wipe (ms)', 'Collect (ms)', 'APCng collect (ms)']);
$worstCollect2500 = 0;
$keysPresent = 0;
$run = 0;
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
    foreach ($metricCounts as $n) {
        $registry = new CollectorRegistry(new Shmetrics("$dir/store" . $run++), false);
        $t0 = hrtime(true);
        $metrics = [];
        for ($i = 0; $i < $n; $i++) {
            $type = TYPES[$i % 4];
            $m = match ($type) {
                'counter' => $registry->registerCounter('bench', "counter_$i", 'A counter.', ['route']),
                'gauge' => $registry->registerGauge('bench', "gauge_$i", 'A gauge.', ['route']),
                'histogram' => $registry->registerHistogram('bench', "histogram_$i", 'A histogram.', ['route']),
                'summary' => $registry->registerSummary('bench', "summary_$i", 'A summary.', ['route']),
            };
            for ($l = 0; $l < LABEL_SETS; $l++) {
                update($m, $type, ["/route/$l"]);
            }
            $metrics[] = [$m, $type];
        }
        $t1 = hrtime(true);
        foreach ($metrics as [$m, $type]) {
            for ($l = 0; $l < LABEL_SETS; $l++) {
                update($m, $type, ["/route/$l"]);
            }
        }
        $t2 = hrtime(true);
        $text = (new RenderTextFormat())->render($registry->getMetricFamilySamples());
        $t3 = hrtime(true);
        if (substr_count($text, "\n# TYPE ") + (str_starts_with($text, '# TYPE ') ? 1 : 0) !== $n) {
            fprintf(STDERR, "collect rendered the wrong number of metrics\n");
            exit(1);
        }
        $registry->wipeStorage();
        $t4 = hrtime(true);
        if ($n === 2500) {
            $worstCollect2500 = max($worstCollect2500, $t3 - $t2);
        }
        $apcng = APCNG_COLLECT[$keys][$n] ?? null;
        $row([
            sprintf('shmetrics %s keys / %d metrics', $keys >= 1000000 ? ($keys / 1000000) . 'M' : ($keys / 1000) . 'k', $n),
            $ms($t1 - $t0), $ms($t2 - $t1), $ms($t4 - $t3), $ms($t3 - $t2),
            $apcng === null ? 'n/t' : sprintf('%.1f', $apcng),
        ]);
    }
}

/** @param array<int, string> $labels */
function update(object $m, string $type, array $labels): void
{
    match ($type) {
        'counter' => $m->inc($labels),
        'gauge' => $m->set(1.5, $labels),
        'histogram', 'summary' => $m->observe(0.3, $labels),
    };
}

// ---- Table 2: one call --------------------------------------------------

$registry = new CollectorRegistry(new Shmetrics("$dir/calls"), false);
$plain = $registry->registerCounter('bench', 'plain', 'No labels.');
$labelled = $registry->registerCounter('bench', 'labelled', 'Two labels.', ['route', 'status']);
$hist = $registry->registerHistogram('bench', 'seconds', 'Default buckets, one label.', ['route']);
$ffi = Native::ffi();
$storage = $registry->getStorage();
$st = $storage->store;
$plain->inc();  // so that its series handle is cached
$raw = (function (): array {
    return [$this->series[''], $this->st];
})->call($plain);

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
    }, 250],
    ['Counter->inc([route, status])', '2 labels', static function (int $n) use ($labelled): void {
        $l = ['/users', '200'];
        for ($i = 0; $i < $n; $i++) {
            $labelled->inc($l);
        }
    }, 250],
    ['Histogram->observe(0.3, [route])', '15 buckets', static function (int $n) use ($hist): void {
        $l = ['/users'];
        for ($i = 0; $i < $n; $i++) {
            $hist->observe(0.3, $l);
        }
    }, 300],
    ['FFI shmetrics_counter_inc()', 'no class', static function (int $n) use ($ffi, $raw): void {
        [$s, $st] = $raw;
        for ($i = 0; $i < $n; $i++) {
            $ffi->shmetrics_counter_inc($st, $s);
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
    ['PHP method call (empty body)', 'for scale', static function (int $n) use ($labelled): void {
        $l = ['/users', '200'];
        for ($i = 0; $i < $n; $i++) {
            $labelled->getLabelNames();
        }
    }, null],
];
printf("\n%-34s %-18s %10s %10s\n", 'One call', '', 'ns/call', 'target');
foreach ($cases as [$name, $note, $body, $target]) {
    $ns = per_call($body, $calls) - $empty;
    printf("%-34s %-18s %10.0f %10s\n", $name, $note, $ns, $target === null ? '' : "<= $target" . ($ns <= $target ? '' : ' MISSED'));
}
printf("\ncollect at 2,500 metrics: %s ms at most (target <= 20 ms)%s\n", $ms($worstCollect2500),
    $worstCollect2500 <= 20e6 ? '' : ' MISSED');
$counted = $storage->stats();
printf("(%d calls per measurement, best of 5; %d writer slot claimed)\n", $calls, $counted['writer_claims_total']);
