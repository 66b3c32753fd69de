<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Tests\Support\TestCase;

/**
 * The PHP snippets of docs/php.md run as written (store paths pointed at
 * a temporary directory) and do what the text says. Its ini blocks are
 * run by FpmTest (and ApacheTest), its apache blocks by ApacheTest, its
 * snippet on PromPHP's classes by promphp/AdapterTest,
 * the one for the installed extension by tests/packaging/run.sh.
 */
final class DocsTest extends TestCase
{
    /** @return list<string> */
    private static function blocks(): array
    {
        $doc = file_get_contents(dirname(__DIR__, 3) . '/docs/php.md');
        preg_match_all('/(?:<!-- packaging-test: ([^>]*) -->\n)?```php\n(.*?)```/s', $doc, $m, PREG_SET_ORDER);
        // Those on PromPHP's own classes run in tests/promphp (AdapterTest);
        // those marked for the installed extension only (`deb-ext`, which
        // fail on FFI by design) in tests/packaging.
        $run = array_filter($m, fn (array $b) => !str_contains($b[2], 'use Prometheus\\') && trim($b[1]) !== 'deb-ext');
        return array_values(array_map(fn (array $b) => $b[2], $run));
    }

    private function runSnippet(string $code, array $env = []): string
    {
        $file = $this->dir . '/snippet.php';
        $code = str_replace('/dev/shm/myapp.metrics', $this->dir . '/doc.metrics', $code);
        $autoload = var_export(dirname(__DIR__) . '/autoload.php', true);
        file_put_contents($file, preg_replace('/^<\?php\n/', "<?php\nrequire $autoload;\n", $code, 1));
        return self::command([PHP_BINARY, $file], null, $env + array_filter([
            'SHMETRICS_LIBRARY' => getenv('SHMETRICS_LIBRARY'),
            'PATH' => getenv('PATH'),
        ]));
    }

    public function testTheDocHasItsSnippets(): void
    {
        self::assertCount(6, self::blocks());
    }

    public function testMigrationSnippet(): void
    {
        $s = self::samples($this->runSnippet(self::blocks()[0]));
        self::assertSame(3.0, $s['myapp_requests{route="/users",status="200"}']);
        self::assertSame(1.0, $s['myapp_request_seconds_count{route="/users"}']);
        self::assertSame(0.0, $s['myapp_inflight']);
        self::assertSame(1.0, $s['php_info{version="' . PHP_VERSION . '"}']);
    }

    public function testFpmAppSnippet(): void
    {
        $this->runSnippet(self::blocks()[4], ['SHMETRICS_STORE' => $this->dir . '/doc.metrics']);
        self::assertSame(1.0, $this->dumped($this->dir . '/doc.metrics')['app_requests{route="/"}']);
    }

    public function testNativeHistogramSnippet(): void
    {
        $this->runSnippet(self::blocks()[1]);
        $text = self::dump($this->dir . '/doc.metrics');
        $s = self::samples($text);
        self::assertSame(1.0, $s['myapp_rpc_seconds_bucket{method="get",le="+Inf"}']);
        self::assertSame(1, preg_match_all('/^myapp_rpc_seconds_bucket/m', $text), 'native only');
        self::assertSame(0.0, $s['myapp_job_seconds_bucket{le="10"}']);
        self::assertSame(1.0, $s['myapp_job_seconds_bucket{le="60"}']);
    }

    public function testExemplarsSnippet(): void
    {
        $this->runSnippet(self::blocks()[2]);
        $om = self::dump($this->dir . '/doc.metrics', 'openmetrics');
        $ex = self::exemplars($om);
        self::assertSame(['trace_id' => '4bf92f3577b34da6'], $ex['myapp_jobs_total{queue="email"}']['labels']);
        self::assertSame(0.42, $ex['myapp_job_seconds_bucket{le="1"}']['value']);
        self::assertCount(2, $ex);
        // The exposition the text shows, but for the timestamps.
        $doc = (string) file_get_contents(dirname(__DIR__, 3) . '/docs/php.md');
        preg_match_all('/^(myapp_\S+ \S+ # \{.*\} \S+) \d+\.\d+$/m', $doc, $m);
        self::assertCount(2, $m[1]);
        foreach ($m[1] as $line) {
            self::assertMatchesRegularExpression('/^' . preg_quote($line, '/') . ' \d+(\.\d+)?$/m', $om);
        }
    }

    public function testTtlSnippet(): void
    {
        $this->runSnippet(self::blocks()[3]);
        $path = $this->dir . '/doc.metrics';
        self::assertSame(1.0, $this->dumped($path)['myapp_logins{user="alice"}']);
        // Registered with the TTL: the same name without one conflicts.
        $registry = new \Shmetrics\CollectorRegistry(new \Shmetrics\Storage\Shmetrics($path), false);
        self::assertSame(600.0, $registry->registerCounter('myapp', 'logins', 'Logins by user.', ['user'], ttl: 600)->getTtl());
        $this->expectException(\Shmetrics\Exception\MetricsRegistrationException::class);
        (new \Shmetrics\CollectorRegistry(new \Shmetrics\Storage\Shmetrics($path), false))
            ->registerCounter('myapp', 'logins', 'Logins by user.', ['user']);
    }

    public function testSizingSnippet(): void
    {
        $this->runSnippet(self::blocks()[5] . "\n" . 'echo json_encode($storage->stats());');
        $stats = (new \Shmetrics\Storage\Shmetrics($this->dir . '/doc.metrics'))->stats();
        self::assertSame(200000, $stats['series_capacity']);
        self::assertSame(64, $stats['writers_capacity']);
    }
}
