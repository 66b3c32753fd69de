<?php

// API fuzzing of the PHP binding (issue 33): random sequences of public
// calls with random arguments, on the extension and on FFI, each run in a
// subprocess of its own. The only outcomes allowed for a call are a result
// or an exception of the binding (Shmetrics\Exception\ShmetricsException),
// or the errors PHP itself raises for a call it refuses (TypeError,
// ValueError, ArgumentCountError; see allowed() for the rest). A run that
// dies of a signal, exceeds its time (a hang), ends with a fatal error or
// throws anything else fails, and its seed is printed: add it to
// seeds.txt, whose seeds every run replays first.
//
//   php tests/fuzz/fuzz.php [--calls N] [--per-run N] [--seconds S] [--engines ext,ffi] [--seed S]
//
// --calls: the calls per engine (default 50000: 100,000 in all), in runs of
// --per-run calls (default 5000): the seeds of seeds.txt, then seeds from
// --seed on (default: random, printed), the engines in turn;
// --seconds: the time budget of the whole (default 60): past it, the runs
// left are not started and the fuzzer fails if fewer calls ran. The
// extension is $SHMETRICS_EXTENSION (scripts/php-tests.sh exports it);
// PromPHP's classes come from $PROMPHP_DIR when set (the adapter is then
// fuzzed too). $FUZZ_PROFILE=1 prints the time each action took, per run.
// Internally: fuzz.php --run ENGINE SEED CALLS DIR.

declare(strict_types=1);

require __DIR__ . '/actions.php';

if (($argv[1] ?? '') === '--run') {
    [, , $engine, $seed, $calls, $dir] = $argv;
    exit(fuzz_run($engine, (int) $seed, (int) $calls, $dir));
}

$opts = getopt('', ['calls:', 'per-run:', 'seconds:', 'engines:', 'seed:']);
$calls = (int) ($opts['calls'] ?? 50000);
$perRun = (int) ($opts['per-run'] ?? 5000);
$budget = (float) ($opts['seconds'] ?? 60);
$engines = explode(',', $opts['engines'] ?? 'ext,ffi');
$seed = isset($opts['seed']) ? (int) $opts['seed'] : random_int(1, 1 << 40);
$extension = getenv('SHMETRICS_EXTENSION');
$regressions = array_map('intval', array_filter(
    file(__DIR__ . '/seeds.txt', FILE_IGNORE_NEW_LINES) ?: [],
    fn (string $l): bool => $l !== '' && $l[0] !== '#'
));

$start = microtime(true);
$failed = [];
$done = [];
// The regression seeds count towards --calls; the engines take turns, so
// that each gets its share of the budget.
$more = max(0, intdiv($calls + $perRun - 1, $perRun) - count($regressions));
$seeds = array_merge($regressions, $more > 0 ? range($seed, $seed + $more - 1) : []);
foreach ($engines as $engine) {
    if ($engine === 'ext' && (!is_string($extension) || !is_file($extension))) {
        fwrite(STDERR, "fuzz: set SHMETRICS_EXTENSION to the built shmetrics.so (bindings/php/ext/build.sh)\n");
        exit(1);
    }
    $done[$engine] = 0;
}
printf("fuzz (%s): seeds %s, then %d to %d, %d calls each\n", implode(', ', $engines),
    $regressions ? implode(' ', $regressions) : '(no regression seeds)', $seed, $seed + $more - 1, $perRun);
foreach ($seeds as $s) {
    foreach ($engines as $engine) {
        $left = $budget - (microtime(true) - $start);
        if ($left <= 0) {
            break 2;
        }
        [$ok, $n, $why] = fuzz_child($engine, $s, $perRun, $extension, min(30.0, max(5.0, $left)));
        $done[$engine] += $n;
        if (!$ok) {
            $failed[] = "$engine seed $s: $why";
            fwrite(STDERR, "fuzz ($engine): seed $s FAILED: $why\n"
                . "  replay: php bindings/php/tests/fuzz/fuzz.php --engines $engine --seed $s --calls $perRun\n");
        }
    }
}
foreach ($done as $engine => $n) {
    printf("fuzz (%s): %d calls in %.1f s\n", $engine, $n, microtime(true) - $start);
    if ($n < $calls) {
        $failed[] = "$engine: only $n of $calls calls within {$budget} s";
    }
}
if ($failed !== []) {
    fwrite(STDERR, "fuzz: FAILED:\n  " . implode("\n  ", $failed) . "\n  (add each failing seed to bindings/php/tests/fuzz/seeds.txt)\n");
    exit(1);
}
echo "fuzz: ok\n";

/**
 * One run in a subprocess, killed after $timeout seconds.
 *
 * @return array{bool, int, string} ok, the calls it made, why it failed
 */
function fuzz_child(string $engine, int $seed, int $calls, string|false $extension, float $timeout): array
{
    $dir = sys_get_temp_dir() . "/shmetrics-fuzz-$engine-$seed-" . getmypid();
    @mkdir($dir, 0700, true);
    $argv = [PHP_BINARY, '-d', 'memory_limit=512M', '-d', 'ffi.enable=1'];
    if ($engine === 'ext' && !extension_loaded('shmetrics')) {
        $argv = array_merge($argv, ['-d', "extension=$extension"]);
    }
    $env = getenv();
    if ($engine === 'ffi') {
        // Not the scan folder that loads the extension (scripts/php-tests.sh's second run).
        unset($env['PHP_INI_SCAN_DIR']);
    }
    $env['SHMETRICS_STORE'] = "$dir/default";
    $argv = array_merge($argv, [__FILE__, '--run', $engine, (string) $seed, (string) $calls, $dir]);
    $p = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $dir, $env);
    stream_set_blocking($pipes[1], false);
    stream_set_blocking($pipes[2], false);
    $out = $err = '';
    $deadline = microtime(true) + $timeout;
    $status = proc_get_status($p);
    while ($status['running'] && microtime(true) < $deadline) {
        $r = [$pipes[1], $pipes[2]];
        $w = $e = null;
        if (@stream_select($r, $w, $e, 0, 100000)) {
            $out .= (string) stream_get_contents($pipes[1]);
            $err .= (string) stream_get_contents($pipes[2]);
        }
        $status = proc_get_status($p);
    }
    $hung = $status['running'];
    if ($hung) {
        posix_kill($status['pid'], SIGKILL);
        usleep(100000);
        $status = proc_get_status($p);
    }
    $out .= (string) stream_get_contents($pipes[1]);
    $err .= (string) stream_get_contents($pipes[2]);
    fclose($pipes[1]);
    fclose($pipes[2]);
    $rc = proc_close($p);
    exec('rm -rf ' . escapeshellarg($dir));
    $n = preg_match('/^calls: (\d+)$/m', $out, $m) ? (int) $m[1] : 0;
    $tail = trim(substr(trim($err . "\n" . $out), -2000));
    if ($hung) {
        return [false, $n, "no answer within $timeout s (a hang); last output:\n$tail"];
    }
    if ($status['signaled']) {
        return [false, $n, "killed by signal {$status['termsig']}:\n$tail"];
    }
    $code = $status['exitcode'] >= 0 ? $status['exitcode'] : $rc;
    if ($code !== 0 || !str_contains($out, 'fuzz run: ok')) {
        return [false, $n, "exit code $code:\n$tail"];
    }
    return [true, $n, ''];
}
