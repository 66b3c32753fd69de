<?php

declare(strict_types=1);

namespace Shmetrics\Tests\PromPHP;

use Prometheus\CollectorRegistry as PromRegistry;
use Prometheus\Counter as PromCounter;
use Prometheus\Exception\MetricsRegistrationException as PromRegistrationException;
use Prometheus\MetricFamilySamples;
use Prometheus\RenderTextFormat as PromRender;
use Prometheus\Storage\InMemory;
use Shmetrics\CollectorRegistry;
use Shmetrics\PromPHP\ShmetricsAdapter;
use Shmetrics\Tests\Support\TestCase;

/**
 * What PromPHP's own tests cannot see: ShmetricsAdapter shares the store
 * with other processes and with the native API, and shows the labels the
 * store adds in PromPHP's shapes.
 */
final class AdapterTest extends TestCase
{
    private function adapter(array $options = []): ShmetricsAdapter
    {
        return new ShmetricsAdapter($this->dir . '/store', $options);
    }

    /** @param MetricFamilySamples[] $families @return array<string, string> "name{l=v,...}" => value */
    private static function flat(array $families): array
    {
        $out = [];
        foreach ($families as $f) {
            foreach ($f->getSamples() as $s) {
                $names = array_merge($f->getLabelNames(), $s->getLabelNames());
                $pairs = array_map(fn ($n, $v) => "$n=$v", $names, $s->getLabelValues());
                $out[$s->getName() . '{' . implode(',', $pairs) . '}'] = $s->getValue();
            }
        }
        return $out;
    }

    public function testCollectSumsEveryProcess(): void
    {
        $store = $this->dir . '/store';
        $pids = [];
        for ($i = 0; $i < 3; $i++) {
            $pids[] = self::command([PHP_BINARY, '-d', 'ffi.enable=1', __DIR__ . '/scripts/request.php', $store]);
        }
        self::assertCount(3, array_unique($pids));
        $got = self::flat($this->adapter()->collect());
        self::assertSame('3', $got['app_requests{route=/users}']);
        self::assertSame('0', $got['app_seconds_bucket{route=/users,le=0.1}']);
        self::assertSame('3', $got['app_seconds_bucket{route=/users,le=1}']);
        self::assertSame('3', $got['app_seconds_bucket{route=/users,le=+Inf}']);
        self::assertSame('3', $got['app_seconds_count{route=/users}']);
        self::assertSame('1.5', $got['app_seconds_sum{route=/users}']);
        self::assertSame('3', $got['app_bytes_count{}']);
        self::assertEqualsWithDelta(1000, (float) $got['app_bytes{quantile=0.5}'], 9.9);
        // The exporter's view (another process) agrees.
        $dumped = $this->dumped($store);
        self::assertSame(3.0, $dumped['app_requests{route="/users"}']);
        self::assertSame(3.0, $dumped['app_seconds_count{route="/users"}']);
    }

    /**
     * The page PromPHP renders over the adapter, and the exporter's, are
     * those PromPHP renders over its own storage: counters named as
     * registered, with `_total` or without, and bounds as PHP writes
     * floats (`le="1"`, `le="2.5"`). The migration test
     * (tests/migration/test_promphp.py) does the same against APCng under
     * php-fpm.
     */
    public function testPagesAreThoseOfPromphpsOwnStorage(): void
    {
        $work = static function (PromRegistry $r): void {
            $r->getOrRegisterCounter('ns', 'jobs', 'Jobs.', ['code'])->inc(['200']);
            $r->getOrRegisterCounter('ns', 'requests_total', 'Requests.', ['route'])->incBy(2.5, ['/a']);
            $r->getOrRegisterGauge('ns', 'temp', 'Temperature.')->set(-1.5);
            $r->getOrRegisterHistogram('ns', 'size', 'Sizes.', [], [0.005, 0.25, 1, 2.5, 10, 1000])->observe(3);
            $r->getOrRegisterHistogram('ns', 'wait_seconds', 'Default buckets.', ['q'])->observe(0.3, ['x']);
        };
        $work($peer = new PromRegistry(new InMemory(), false));
        $work($ours = new PromRegistry($adapter = $this->adapter(), false));
        $want = (new PromRender())->render($peer->getMetricFamilySamples());
        self::assertStringContainsString("# TYPE ns_jobs counter\nns_jobs{code=\"200\"} 1\n", $want);
        self::assertStringContainsString('ns_size_bucket{le="1"} 0', $want);
        self::assertSame($want, (new PromRender())->render($ours->getMetricFamilySamples()));
        // The exporter's page: the same families, in registration order.
        $families = static function (string $page): array {
            $out = [];
            foreach (preg_split('/^(?=# HELP )/m', $page, -1, PREG_SPLIT_NO_EMPTY) as $family) {
                $out[strtok($family, "\n")] = $family;
            }
            ksort($out);
            return $out;
        };
        self::assertSame($families($want), $families($adapter->getStorage()->render()));
    }

    public function testTheNativeApiAndTheAdapterShareMetrics(): void
    {
        $adapter = $this->adapter();
        $native = new CollectorRegistry($adapter->getStorage(), false);
        $native->getOrRegisterCounter('app', 'jobs', 'Jobs run.', ['queue'])->incBy(2, ['mail']);
        $native->getOrRegisterGauge('app', 'workers', 'Per process.', [], 'all')->set(7);
        $prom = new PromRegistry($adapter, false);
        $prom->getOrRegisterCounter('app', 'jobs', 'Jobs run.', ['queue'])->incBy(3, ['mail']);
        $got = self::flat($prom->getMetricFamilySamples());
        self::assertSame('5', $got['app_jobs{queue=mail}']);
        self::assertSame('7', $got['app_workers{pid=' . getmypid() . '}']);
    }

    public function testAnotherDefinitionOfTheNameIsPromPHPsRegistrationError(): void
    {
        $adapter = $this->adapter();
        (new CollectorRegistry($adapter->getStorage(), false))->registerCounter('app', 'jobs', 'Jobs.', ['queue']);
        $this->expectException(PromRegistrationException::class);
        $this->expectExceptionMessage('app_jobs');
        (new PromCounter($adapter, 'app', 'jobs', 'Jobs.', ['kind']))->inc(['x']);
    }

    public function testOverflowSeriesRenderWithTheirLabelBeforeLe(): void
    {
        $adapter = $this->adapter(['max_series' => 4]);
        $h = (new PromRegistry($adapter, false))->getOrRegisterHistogram('app', 'seconds', 'Latency.', ['user'], [1]);
        foreach (['a', 'b', 'c', 'd', 'e'] as $user) {
            $h->observe(0.5, [$user]);
        }
        $got = self::flat($adapter->collect());
        self::assertSame('1', $got['app_seconds_bucket{user=a,le=1}']);
        $overflow = array_filter(
            $got,
            fn (string $k) => str_starts_with($k, 'app_seconds_count{user=,shmetrics_overflow=true}'),
            ARRAY_FILTER_USE_KEY
        );
        self::assertNotEmpty($overflow, implode("\n", array_keys($got)));
        self::assertSame(5, array_sum(array_map(
            'intval',
            array_filter($got, fn (string $k) => str_starts_with($k, 'app_seconds_count{'), ARRAY_FILTER_USE_KEY)
        )));
        self::assertPromtoolAccepts((new PromRender())->render($adapter->collect()));
    }

    public function testSortingIsByLabelValuesOrElseCreationOrder(): void
    {
        $adapter = $this->adapter();
        $g = (new PromRegistry($adapter, false))->getOrRegisterGauge('app', 'g', 'G.', ['k']);
        $g->set(1, ['b']);
        $g->set(2, ['a']);
        $values = fn (bool $sort) => array_map(
            fn ($s) => $s->getLabelValues()[0],
            $adapter->collect($sort)[0]->getSamples()
        );
        self::assertSame(['a', 'b'], $values(true));
        self::assertSame(['b', 'a'], $values(false));
    }

    /**
     * The library's series in columns (SHMETRICS_FORMAT_PROMPHP_SERIES)
     * and the snapshot walk the adapter falls back to (for a library or an
     * extension that predates the format) are the same, every type, an
     * added label (`pid`) and odd values included, sorted or not.
     */
    public function testTheLibrarysSeriesAreThoseOfTheSnapshotWalk(): void
    {
        $adapter = $this->adapter();
        $r = new PromRegistry($adapter, false);
        $c = $r->getOrRegisterCounter('app', 'jobs_total', "J \"q\"\n", ['a', 'b']);
        foreach ([['z', ''], ['', 'z'], ["q\"\n\\", 'é'], ['b', 'a'], ['ba', '']] as $i => $l) {
            $c->incBy($i + 0.5, $l);
        }
        $g = $r->getOrRegisterGauge('app', 'temp', 'T.', ['x']);
        foreach ([1e20, -0.0, INF, 1 / 3] as $i => $v) {
            $g->set($v, ["v$i"]);
        }
        $h = $r->getOrRegisterHistogram('app', 'seconds', 'S.', ['r'], [0.00001, 0.1, 1, 123456789012345.0, 1e15]);
        foreach ([0.05, 3, 1e16, 0.1] as $v) {
            $h->observe($v, ['/x']);
        }
        $r->getOrRegisterSummary('app', 'size', 'Z.', ['k'], 60, [0.5, 0.99])->observe(3, ['a']);
        $r->getOrRegisterGauge('app', 'unused', 'U.');
        $storage = $adapter->getStorage();
        (new \Shmetrics\Gauge($storage, '', 'workers', 'W.', ['pool'], 'all'))->set(3, ['p1']);
        $call = static fn (string $method, bool $sorted) => (\Closure::bind(
            static fn () => self::$method($storage, $sorted),
            null,
            \Shmetrics\PromPHP\Samples::class
        ))();
        foreach ([true, false] as $sorted) {
            $lib = $call('families', $sorted);
            // NAN !== NAN (an empty summary window): as serialize() writes them.
            self::assertSame(serialize($call('walk', $sorted)), serialize($lib));
            self::assertSame(['app_jobs_total', 'app_temp', 'app_seconds', 'app_size', 'workers'],
                array_column($lib['families'], 0));
        }
        self::assertPromtoolAccepts((new PromRender())->render($adapter->collect()));
    }

    public function testTheDocsSnippetRunsAsWritten(): void
    {
        $doc = (string) file_get_contents(dirname(__DIR__, 4) . '/docs/php.md');
        preg_match_all('/```php\n(.*?)```/s', $doc, $m);
        $snippets = array_values(array_filter($m[1], fn (string $b) => str_contains($b, 'use Prometheus\\')));
        self::assertCount(1, $snippets);
        $store = $this->dir . '/doc.metrics';
        $code = str_replace('/dev/shm/myapp.metrics', $store, $snippets[0]);
        $bootstrap = var_export(__DIR__ . '/bootstrap.php', true);
        $code = preg_replace('/^<\?php\n/', "<?php\nrequire $bootstrap;\n", $code, 1)
            . '$registry->getOrRegisterCounter("myapp", "requests", "Requests.")->inc();';
        file_put_contents($this->dir . '/snippet.php', $code);
        self::command([PHP_BINARY, '-d', 'ffi.enable=1', $this->dir . '/snippet.php']);
        $s = $this->dumped($store);
        self::assertSame(1.0, $s['php_info{version="' . PHP_VERSION . '"}']);
        self::assertSame(1.0, $s['myapp_requests']);
    }

    public function testMetricsWorkAgainAfterAWipe(): void
    {
        $adapter = $this->adapter();
        $counter = (new PromRegistry($adapter, false))->getOrRegisterCounter('app', 'c', 'C.');
        $counter->incBy(5);
        (new ShmetricsAdapter($adapter->getStorage()))->wipeStorage();
        self::assertSame([], $adapter->collect());
        $counter->inc();
        self::assertSame(['app_c{}' => '1'], self::flat($adapter->collect()));
    }

    /** The fuzzer found UnhandledMatchError for another $data['type']. */
    public function testTheAdaptersUpdatesAreOfTheirMethodsType(): void
    {
        $adapter = $this->adapter();
        $adapter->updateHistogram(['name' => 'h', 'help' => 'H.', 'type' => 'nonsense', 'labelNames' => [],
            'labelValues' => [], 'value' => 0.5, 'buckets' => [1]]);
        $adapter->updateCounter(['name' => 'c', 'help' => 'C.', 'type' => null, 'labelNames' => [],
            'labelValues' => [], 'value' => 2, 'command' => 1]);
        $s = $this->dumped($this->dir . '/store');
        self::assertSame(1.0, $s['h_bucket{le="1"}'] ?? null);
        self::assertSame(2.0, $s['c'] ?? null);
    }
}
