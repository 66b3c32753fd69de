<?php

// The fuzzer's run (see fuzz.php): CALLS random public calls with random
// arguments, seeded, in the folder DIR (the cwd: a path PHP makes of a
// wrong argument lands there). Without strict_types: PHP's coercions
// (an int's string, a float's int) are part of what is tried. Prints
// "calls: N" and "fuzz run: ok", or the disallowed outcome, exit code 3.

use Shmetrics\CollectorRegistry;
use Shmetrics\Counter;
use Shmetrics\Exception\ShmetricsException;
use Shmetrics\Gauge;
use Shmetrics\Histogram;
use Shmetrics\Native;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Summary;

/** The state of a run: what its calls made, for later calls to use. */
final class FuzzPool
{
    public string $dir;
    /** @var list<object> */
    public array $objects = [];
    public int $calls = 0;
    public bool $child = false;
    public bool $promphp = false;
}

/** Whether $e is an outcome a call may have. */
function fuzz_allowed(Throwable $e): bool
{
    if ($e instanceof ShmetricsException || $e instanceof TypeError || $e instanceof ValueError
        || $e instanceof ArgumentCountError) {
        return true;
    }
    // PromPHP's own refusals, on its adapter.
    if ($e instanceof Prometheus\Exception\MetricsRegistrationException
        || $e instanceof Prometheus\Exception\MetricNotFoundException
        || $e instanceof Prometheus\Exception\StorageException) {
        return true;
    }
    // PromPHP's InvalidArgumentException (PHP's), from its classes or the adapter's refusals.
    if (get_class($e) === InvalidArgumentException::class && (str_contains($e->getFile(), '/src/Prometheus/')
        || str_ends_with($e->getFile(), '/src/PromPHP/ShmetricsAdapter.php'))) {
        return true;
    }
    $m = $e->getMessage();
    // What PHP raises for an object made without its constructor (the
    // extension's internal classes say "was not constructed", as PHP's own
    // say it), cloned, or serialized when it cannot be.
    $php = ['was not constructed', 'must not be accessed before initialization', 'Cannot instantiate',
        'is made by Shmetrics\Ext\open()', 'Trying to clone an uncloneable object', 'Serialization of',
        'Unserialization of', 'is constructed already', 'Cannot directly construct'];
    if (get_class($e) === Error::class || get_class($e) === Exception::class || $e instanceof ReflectionException) {
        foreach ($php as $s) {
            if (str_contains($m, $s)) {
                return true;
            }
        }
        // PHP's own, for an internal final class: "Class X is an internal class marked as final that
        // cannot be instantiated without invoking its constructor".
        if ($e instanceof ReflectionException && str_contains($m, 'cannot be instantiated without invoking its constructor')) {
            return true;
        }
    }
    return false;
}

function fuzz_pick(array $a): mixed
{
    return $a[mt_rand(0, count($a) - 1)];
}

/** A random value of any type, often one the call does not expect. */
function fuzz_value(FuzzPool $pool, int $depth = 0): mixed
{
    switch (mt_rand(0, 9)) {
        case 0:
        case 1:
            return fuzz_pick([0, 1, -1, 2, 7, 255, 256, 65535, 2 ** 31, 2 ** 32, 2 ** 32 + 1, 2 ** 53, PHP_INT_MAX,
                PHP_INT_MIN, -(2 ** 32), mt_rand(-1000, 1000), 18446744073709552]);
        case 2:
            return fuzz_pick([0.0, -0.0, 0.5, 1.5, -1.5, NAN, INF, -INF, 1e308, -1e308, 5e-324, 1e-300,
                9.2233720368547758e18, 1.8446744073709552e19, mt_rand() / mt_getrandmax()]);
        case 3:
        case 4:
            return fuzz_string();
        case 5:
            return fuzz_pick([null, true, false]);
        case 6:
            return $depth < 2 ? fuzz_labels($pool, $depth + 1) : [];
        case 7:
            return $pool->objects ? fuzz_pick($pool->objects) : null;
        case 8:
            return fuzz_pick([new stdClass(), new class () {
                public function __toString(): string
                {
                    return "str\xff";
                }
            }, new class () {
                public function __toString(): string
                {
                    return 'ok';
                }
            }, static fn () => 1, new ArrayObject([1, 2])]);
        default:
            return fuzz_name();
    }
}

/** A string: names the store accepts, and odd ones (invalid UTF-8, NUL, UTF-16, long). */
function fuzz_string(): string
{
    return fuzz_pick(['', 'a', 'app', 'requests_total', 'route', 'le', 'quantile', '__name__', '0abc', 'a-b', 'a.b',
        "\xff", "\xc3\x28", "\xed\xa0\x80", "a\0b", "\0", "\xfe\xff\x00r\x00o", 'é', '日本', str_repeat('x', 300),
        str_repeat("\xff", 64), str_repeat('y', 70000), 'GET', '/users/1', "line\nbreak", '"quoted"', '\\',
        (string) mt_rand(), "x\xffy"]);
}

/** A metric or namespace name: mostly valid, a few names of the pool, so that registrations meet again. */
function fuzz_name(): string
{
    return mt_rand(0, 5) > 0 ? fuzz_pick(['app', 'db', 'requests', 'latency', 'size', 'x', 'y', 'ns_a', '']) : fuzz_string();
}

/** Label names or values: lists, maps, wrong element types. */
function fuzz_labels(FuzzPool $pool, int $depth = 0): array
{
    $n = fuzz_pick([0, 0, 1, 1, 2, 2, 3, 5, 70]);
    $out = [];
    for ($i = 0; $i < $n; $i++) {
        $v = mt_rand(0, 4) > 0 ? fuzz_pick(['a', 'b', 'route', 'status', 'GET', '200', 1, 2]) : fuzz_value($pool, $depth + 1);
        if (mt_rand(0, 9) === 0) {
            $out[fuzz_string()] = $v;
        } else {
            $out[] = $v;
        }
    }
    return $out;
}

/** Store options: valid small ones and every kind of wrong one (never a valid huge one: a real file). */
function fuzz_options(FuzzPool $pool): array
{
    if (mt_rand(0, 2) === 0) {
        return [];
    }
    $keys = ['create', 'read_only', 'mode', 'max_families', 'max_series', 'label_bytes', 'max_writers',
        'cells_per_writer', 'sketch_cells_per_writer', 'nope', 0];
    $out = [];
    for ($i = mt_rand(1, 3); $i > 0; $i--) {
        $k = fuzz_pick($keys);
        $out[$k] = match (mt_rand(0, 3)) {
            0 => in_array($k, ['create', 'read_only'], true) ? (bool) mt_rand(0, 1) : mt_rand(1, 64),
            1 => fuzz_pick([-1, PHP_INT_MIN, 2 ** 32, 2 ** 32 + 8, 2 ** 64]),
            default => fuzz_value($pool),
        };
    }
    return $out;
}

function fuzz_path(FuzzPool $pool): mixed
{
    $d = $pool->dir;
    return fuzz_pick(["$d/store", "$d/store", "$d/store", "$d/other", "$d/missing/store", '', "$d/store\0x",
        "$d/garbage", null, 1]);
}

/** Some object of the pool of class $class, or a random value. */
function fuzz_object(FuzzPool $pool, string $class): mixed
{
    $of = array_values(array_filter($pool->objects, fn ($o) => $o instanceof $class));
    return $of && mt_rand(0, 7) > 0 ? fuzz_pick($of) : fuzz_value($pool);
}

/**
 * The object a method is called on: one of the pool of class $class, else
 * one made without its constructor, else a new stdClass, whose call the
 * action skips (calling a method a value has not is the fuzzer's mistake).
 */
function fuzz_target(FuzzPool $pool, string $class): object
{
    $of = array_values(array_filter($pool->objects, fn ($o) => $o instanceof $class));
    if ($of && mt_rand(0, 15) > 0) {
        return fuzz_pick($of);
    }
    try {
        return (new ReflectionClass($class))->newInstanceWithoutConstructor();
    } catch (Throwable) {
        return new stdClass();
    }
}

function fuzz_keep(FuzzPool $pool, mixed $v): void
{
    if (is_object($v)) {
        $pool->objects[] = $v;
        if (count($pool->objects) > 64) {
            array_splice($pool->objects, mt_rand(0, 63), 1);
        }
    }
}

/** Random arguments for a metric's update: a value, labels, an exemplar; cut at a random count. */
function fuzz_args(FuzzPool $pool, int $max = 4): array
{
    $args = [mt_rand(0, 3) > 0 ? fuzz_pick([1, 2.5, -1, 0, NAN, INF, 1e300]) : fuzz_value($pool), fuzz_labels($pool),
        mt_rand(0, 2) === 0 ? ['trace_id' => fuzz_pick(['abc', "\xff", 1, [], null])] : fuzz_value($pool), fuzz_value($pool)];
    return array_slice($args, 0, mt_rand(0, $max));
}

/** Random arguments for a registration: namespace, name, help, labels, then the type's own. */
function fuzz_register_args(FuzzPool $pool): array
{
    $args = [fuzz_name(), fuzz_name(), mt_rand(0, 3) > 0 ? 'Help.' : fuzz_value($pool),
        mt_rand(0, 3) > 0 ? fuzz_pick([[], ['route'], ['route', 'status'], ['le'], ['quantile'], ['a', 'a']]) : fuzz_labels($pool)];
    for ($i = mt_rand(0, 4); $i > 0; $i--) {
        $args[] = fuzz_pick([null, true, false, [0.1, 1, 10], [], [1, 0.5], [0.5, 0.9], ['bucketFactor' => 1.1],
            ['maxBucketNumber' => -1], 'sum', 'livemax', 'nope', 60, 0, -5, 18446744073709552, PHP_INT_MAX, 0.001,
            NAN, fuzz_value($pool)]);
    }
    return $args;
}

/** The actions: each makes one public call (or a few, for a fork) with random arguments. */
function fuzz_actions(FuzzPool $pool, bool $ext): array
{
    $kinds = [Counter::class, Gauge::class, Histogram::class, Summary::class];
    $a = [
        'new storage' => fn () => fuzz_keep($pool, new Shmetrics(fuzz_path($pool), fuzz_options($pool))),
        'storage method' => function () use ($pool) {
            $s = fuzz_target($pool, Shmetrics::class);
            if (!$s instanceof Shmetrics) {
                return;
            }
            $m = fuzz_pick(['render', 'contentType', 'stats', 'collect', 'wipeStorage', 'path', 'render', 'render']);
            $args = mt_rand(0, 1) ? [fuzz_pick([0, 1, 2, -1, 2 ** 32, PHP_INT_MAX])] : [];
            $s->$m(...$args);
        },
        'new registry' => fn () => fuzz_keep($pool, new CollectorRegistry(
            mt_rand(0, 2) ? fuzz_object($pool, Shmetrics::class) : fuzz_path($pool),
            (bool) mt_rand(0, 1)
        )),
        'default registry' => fn () => fuzz_keep($pool, CollectorRegistry::getDefault()),
        'registry register' => function () use ($pool) {
            $r = fuzz_target($pool, CollectorRegistry::class);
            if (!$r instanceof CollectorRegistry) {
                return;
            }
            $m = fuzz_pick(['register', 'getOrRegister', 'getOrRegister', 'get']) . fuzz_pick(['Counter', 'Gauge', 'Histogram', 'Summary']);
            $args = fuzz_register_args($pool);
            fuzz_keep($pool, $r->$m(...(str_starts_with($m, 'get') && !str_starts_with($m, 'getOr') ? array_slice($args, 0, 2) : $args)));
        },
        'registry method' => function () use ($pool) {
            $r = fuzz_target($pool, CollectorRegistry::class);
            if (!$r instanceof CollectorRegistry) {
                return;
            }
            $m = fuzz_pick(['getMetricFamilySamples', 'wipeStorage', 'getStorage']);
            fuzz_keep($pool, $r->$m());
        },
        'new metric' => function () use ($pool, $kinds) {
            $class = fuzz_pick($kinds);
            fuzz_keep($pool, new $class(fuzz_object($pool, Shmetrics::class), ...fuzz_register_args($pool)));
        },
        'update' => function () use ($pool) {
            $m = fuzz_target($pool, fuzz_pick([Counter::class, Gauge::class, Histogram::class, Summary::class]));
            if (!$m instanceof \Shmetrics\Collector) {
                return;
            }
            $method = match (true) {
                $m instanceof Counter => fuzz_pick(['inc', 'incBy', 'incBy']),
                $m instanceof Gauge => fuzz_pick(['set', 'inc', 'dec', 'incBy', 'decBy', 'setToCurrentTime']),
                $m instanceof Histogram, $m instanceof Summary => 'observe',
            };
            $m->$method(...fuzz_args($pool));
        },
        'update loop' => function () use ($pool) {
            $m = fuzz_target($pool, fuzz_pick([Counter::class, Gauge::class, Histogram::class, Summary::class]));
            if (!$m instanceof \Shmetrics\Collector) {
                return;
            }
            $labels = ['a', 'b'];
            for ($i = 0; $i < 5; $i++) {
                $m instanceof Counter ? $m->inc($labels) : ($m instanceof Gauge ? $m->set($i, $labels) : $m->observe($i, $labels));
            }
        },
        'metric accessor' => function () use ($pool) {
            $m = fuzz_target($pool, fuzz_pick([Counter::class, Gauge::class, Histogram::class, Summary::class]));
            if (!$m instanceof \Shmetrics\Collector) {
                return;
            }
            $method = fuzz_pick(['getName', 'getHelp', 'getType', 'getLabelNames', 'getKey', 'getTtl']);
            if ($m instanceof Gauge && mt_rand(0, 1)) {
                $method = 'getMode';
            }
            $m->$method();
        },
        'static' => fn () => fuzz_pick([
            fn () => Histogram::exponentialBuckets(fuzz_value($pool), fuzz_value($pool), fuzz_value($pool)),
            fn () => Histogram::exponentialBuckets(0.1, 2, mt_rand(-2, 600)),
            fn () => Histogram::getDefaultBuckets(),
            fn () => Summary::getDefaultQuantiles(),
            fn () => Native::version(),
            fn () => Native::lastError(),
            fn () => Native::exception(fuzz_value($pool), fuzz_value($pool)),
            fn () => \Shmetrics\Snapshot::take(fuzz_object($pool, Shmetrics::class)),
        ])(),
        'without constructor' => fn () => fuzz_keep($pool, (new ReflectionClass(fuzz_pick(array_merge($kinds, [
            CollectorRegistry::class, Shmetrics::class, \Shmetrics\Collector::class,
            \Shmetrics\PromPHP\ShmetricsAdapter::class,
        ], $ext ? ['Shmetrics\Ext\Store'] : []))))->newInstanceWithoutConstructor()),
        'construct again' => function () use ($pool) {
            $o = fuzz_pick($pool->objects ?: [new stdClass()]);
            if (method_exists($o, '__construct')) {
                $o->__construct(...fuzz_register_args($pool));
            }
        },
        'clone, dump, serialize' => function () use ($pool) {
            $o = fuzz_pick($pool->objects ?: [new stdClass()]);
            ob_start();
            try {
                match (mt_rand(0, 3)) {
                    0 => fuzz_keep($pool, clone $o),
                    1 => var_dump($o),
                    2 => print_r($o),
                    default => unserialize(serialize($o)),
                };
            } finally {
                ob_end_clean();
            }
        },
        'wipe' => fn () => (new Shmetrics($pool->dir . '/store'))->wipeStorage(),
        'replace the store' => function () use ($pool) {
            $d = $pool->dir;
            if (mt_rand(0, 1)) {
                new Shmetrics("$d/next");
                rename("$d/next", "$d/store");
            } else {
                @unlink("$d/store");
            }
        },
        'gc' => fn () => gc_collect_cycles(),
        'drop' => function () use ($pool) {
            if ($pool->objects) {
                array_splice($pool->objects, mt_rand(0, count($pool->objects) - 1), 1);
            }
        },
        'fork' => fn () => fuzz_fork($pool, $ext),
    ];
    if ($ext) {
        $a['ext function'] = function () use ($pool) {
            $store = fuzz_object($pool, 'Shmetrics\Ext\Store');
            $f = fuzz_pick(['open', 'wipe', 'render', 'content_type', 'stats', 'snapshot', 'last_error', 'version']);
            $out = null;
            $r = match ($f) {
                'open' => \Shmetrics\Ext\open(fuzz_path($pool), fuzz_options($pool)),
                'wipe' => \Shmetrics\Ext\wipe($store),
                'render' => \Shmetrics\Ext\render($store, fuzz_value($pool), $out),
                'content_type' => \Shmetrics\Ext\content_type(fuzz_value($pool)),
                'stats' => \Shmetrics\Ext\stats($store, $out),
                'snapshot' => \Shmetrics\Ext\snapshot($store, $out),
                'last_error' => \Shmetrics\Ext\last_error(),
                default => \Shmetrics\Ext\version(),
            };
            fuzz_keep($pool, $r);
        };
    }
    if ($pool->promphp) {
        $a['promphp'] = function () use ($pool) {
            $adapters = array_values(array_filter($pool->objects, fn ($o) => $o instanceof \Shmetrics\PromPHP\ShmetricsAdapter));
            $adapter = $adapters && mt_rand(0, 3) ? fuzz_pick($adapters)
                : new \Shmetrics\PromPHP\ShmetricsAdapter(fuzz_object($pool, Shmetrics::class));
            fuzz_keep($pool, $adapter);
            if (mt_rand(0, 1)) {
                $registry = new \Prometheus\CollectorRegistry($adapter, false);
                $type = fuzz_pick(['Counter', 'Gauge', 'Histogram', 'Summary']);
                $args = fuzz_register_args($pool);
                $m = $registry->{"getOrRegister$type"}(...array_slice($args, 0, 4));
                $method = ['Counter' => 'incBy', 'Gauge' => 'set', 'Histogram' => 'observe', 'Summary' => 'observe'][$type];
                $m->$method(mt_rand(0, 3) ? 1 : fuzz_value($pool), mt_rand(0, 3) ? ['a', 'b'] : fuzz_labels($pool));
                return;
            }
            $method = fuzz_pick(['updateCounter', 'updateGauge', 'updateHistogram', 'updateSummary', 'collect', 'wipeStorage']);
            if (str_starts_with($method, 'update')) {
                $data = ['name' => fuzz_name(), 'help' => 'h', 'type' => 'x', 'labelNames' => fuzz_labels($pool),
                    'labelValues' => fuzz_labels($pool), 'value' => fuzz_value($pool), 'command' => fuzz_value($pool),
                    'buckets' => fuzz_pick([[0.1, 1], fuzz_value($pool)]), 'maxAgeSeconds' => fuzz_value($pool),
                    'quantiles' => fuzz_pick([[0.5], fuzz_value($pool)])];
                foreach (array_keys($data) as $k) {
                    if (mt_rand(0, 5) === 0) {
                        unset($data[$k]);
                    }
                }
                $adapter->$method($data);
            } else {
                $adapter->$method();
            }
        };
    }
    return $a;
}

/** Forks: the child makes a few calls on what it inherited, then exits; its end is checked. */
function fuzz_fork(FuzzPool $pool, bool $ext): void
{
    if ($pool->child || !function_exists('pcntl_fork') || mt_rand(0, 3) > 0) {
        return;
    }
    $pid = pcntl_fork();
    if ($pid === 0) {
        $pool->child = true;
        $actions = fuzz_actions($pool, $ext);
        $names = fuzz_weighted(array_keys($actions));
        for ($i = 0; $i < 20; $i++) {
            fuzz_call($pool, $actions, fuzz_pick($names));
        }
        exit(0);
    }
    if ($pid > 0) {
        pcntl_waitpid($pid, $status);
        if (pcntl_wifsignaled($status) || pcntl_wexitstatus($status) !== 0) {
            echo 'a forked child ', pcntl_wifsignaled($status) ? 'died of signal ' . pcntl_wtermsig($status)
                : 'exited with ' . pcntl_wexitstatus($status), "\n";
            exit(3);
        }
    }
}

/** Makes one action; exits 3 on an outcome not allowed. */
function fuzz_call(FuzzPool $pool, array $actions, string $name): void
{
    $pool->calls++;
    $t = hrtime(true);
    try {
        $actions[$name]();
    } catch (Throwable $e) {
        if (!fuzz_allowed($e)) {
            echo "calls: {$pool->calls}\n", "action \"$name\" threw ", get_class($e), ': ', substr($e->getMessage(), 0, 500),
                "\n", $e->getTraceAsString(), "\n";
            exit(3);
        }
    } finally {
        if (getenv('FUZZ_PROFILE')) {
            $GLOBALS['fuzz_profile'][$name] = ($GLOBALS['fuzz_profile'][$name] ?? 0) + hrtime(true) - $t;
        }
    }
}

/**
 * The action names, each as many times as its weight: the costly ones
 * (a fork, a new store file, a wipe) less often, so that a run of 5,000
 * calls takes about half a second.
 *
 * @param list<string> $names
 * @return list<string>
 */
function fuzz_weighted(array $names): array
{
    $weights = ['fork' => 1, 'replace the store' => 1, 'wipe' => 1, 'new registry' => 2, 'default registry' => 2,
        'registry method' => 3, 'storage method' => 4, 'promphp' => 5, 'construct again' => 5];
    $out = [];
    foreach ($names as $name) {
        array_push($out, ...array_fill(0, $weights[$name] ?? 10, $name));
    }
    return $out;
}

function fuzz_run(string $engine, int $seed, int $calls, string $dir): int
{
    require dirname(__DIR__, 2) . '/autoload.php';
    $pool = new FuzzPool();
    $pool->dir = $dir;
    file_put_contents("$dir/garbage", str_repeat("not a store\n", 100));
    $promphp = getenv('PROMPHP_DIR');
    if (is_string($promphp) && is_file("$promphp/src/Prometheus/CollectorRegistry.php")) {
        spl_autoload_register(static function (string $class) use ($promphp): void {
            if (str_starts_with($class, 'Prometheus\\')) {
                $f = "$promphp/src/" . str_replace('\\', '/', $class) . '.php';
                if (is_file($f)) {
                    require $f;
                }
            }
        });
        $pool->promphp = true;
    }
    $ext = $engine === 'ext';
    if ($ext !== extension_loaded('shmetrics')) {
        echo "engine $engine, but the extension is ", $ext ? 'not ' : '', "loaded\n";
        return 1;
    }
    // Warnings and deprecations of PHP's coercions are not failures; a fatal error is (exit 255).
    set_error_handler(fn () => true);
    mt_srand($seed);
    $actions = fuzz_actions($pool, $ext);
    $names = fuzz_weighted(array_keys($actions));
    while ($pool->calls < $calls) {
        fuzz_call($pool, $actions, fuzz_pick($names));
    }
    if (getenv('FUZZ_PROFILE')) {
        arsort($GLOBALS['fuzz_profile']);
        foreach ($GLOBALS['fuzz_profile'] as $name => $ns) {
            fprintf(STDERR, "%-24s %8.1f ms\n", $name, $ns / 1e6);
        }
    }
    echo "calls: {$pool->calls}\nfuzz run: ok\n";
    return 0;
}
