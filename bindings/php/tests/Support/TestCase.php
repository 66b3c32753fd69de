<?php

declare(strict_types=1);

namespace Shmetrics\Tests\Support;

use Shmetrics\CollectorRegistry;
use Shmetrics\Storage\Shmetrics;

/**
 * A temporary directory per test, stores in it, and the two outside views
 * of a store the tests check values through: `shmetrics dump` (the CLI,
 * another process) and promtool.
 */
abstract class TestCase extends \PHPUnit\Framework\TestCase
{
    protected string $dir;

    protected function setUp(): void
    {
        $this->dir = self::tempDir('shmetrics-php-');
    }

    protected function tearDown(): void
    {
        self::removeTree($this->dir);
    }

    public static function tempDir(string $prefix): string
    {
        $base = is_dir('/dev/shm') && is_writable('/dev/shm') ? '/dev/shm' : sys_get_temp_dir();
        $dir = $base . '/' . $prefix . bin2hex(random_bytes(6));
        mkdir($dir, 0700);
        return $dir;
    }

    public static function removeTree(string $dir): void
    {
        if (!is_dir($dir)) {
            return;
        }
        $it = new \RecursiveIteratorIterator(
            new \RecursiveDirectoryIterator($dir, \FilesystemIterator::SKIP_DOTS),
            \RecursiveIteratorIterator::CHILD_FIRST
        );
        foreach ($it as $f) {
            $f->isDir() && !$f->isLink() ? rmdir($f->getPathname()) : unlink($f->getPathname());
        }
        rmdir($dir);
    }

    /** A new store file in this test's directory. */
    protected function store(array $options = [], string $name = 'store'): Shmetrics
    {
        return new Shmetrics($this->dir . '/' . $name, $options);
    }

    protected function registry(array $options = []): CollectorRegistry
    {
        return new CollectorRegistry($this->store($options), false);
    }

    /** The shmetrics command (SHMETRICS_BIN, else the repository's debug build). */
    public static function bin(): string
    {
        $bin = getenv('SHMETRICS_BIN') ?: dirname(__DIR__, 4) . '/target/debug/shmetrics';
        if (!is_executable($bin)) {
            self::fail("$bin is missing: run `cargo build -p shmetrics` or set SHMETRICS_BIN");
        }
        return $bin;
    }

    /** `shmetrics dump --store PATH`: the store as another process sees it. */
    public static function dump(string $store, string $format = 'prometheus'): string
    {
        return self::command([self::bin(), 'dump', '--store', $store, '--format', $format]);
    }

    /**
     * Runs a command; fails the test unless it exits 0.
     *
     * @param list<string> $argv
     */
    public static function command(array $argv, ?string $stdin = null, ?array $env = null): string
    {
        $p = proc_open($argv, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        self::assertIsResource($p);
        fwrite($pipes[0], $stdin ?? '');
        fclose($pipes[0]);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $rc = proc_close($p);
        self::assertSame(0, $rc, implode(' ', $argv) . " exited $rc:\n$err$out");
        return $out;
    }

    /** promtool's linter must accept the exposition (it reads stdin). */
    public static function assertPromtoolAccepts(string $exposition): void
    {
        $out = self::command(['promtool', 'check', 'metrics'], $exposition);
        self::assertSame('', trim($out), "promtool: $out");
    }

    /**
     * The samples of a text exposition: "name{l="v",...}" => value, label
     * pairs in the order written.
     *
     * @return array<string, float>
     */
    public static function samples(string $exposition): array
    {
        $out = [];
        foreach (explode("\n", $exposition) as $line) {
            if ($line === '' || $line[0] === '#') {
                continue;
            }
            $at = strrpos($line, ' ');
            self::assertNotFalse($at, "not a sample: $line");
            $value = substr($line, $at + 1);
            $out[substr($line, 0, $at)] = match ($value) {
                '+Inf' => INF,
                '-Inf' => -INF,
                'NaN' => NAN,
                default => (float) $value,
            };
        }
        return $out;
    }

    /**
     * The exemplars of an OpenMetrics exposition, read by prometheus_client's
     * OpenMetrics parser (python3): "name{l="v",...}" (or "name" without
     * labels) => ['labels' => [...], 'value' => float, 'timestamp' => float].
     * The parser also checks the whole exposition.
     *
     * @return array<string, array{labels: array<string, string>, value: float, timestamp: float}>
     */
    public static function exemplars(string $openmetrics): array
    {
        $script = <<<'PY'
            import json, sys
            from prometheus_client.openmetrics.parser import text_string_to_metric_families
            out = {}
            for fam in text_string_to_metric_families(sys.stdin.read()):
                for s in fam.samples:
                    if s.exemplar is None:
                        continue
                    labels = ",".join('%s="%s"' % kv for kv in s.labels.items())
                    out[s.name + ("{%s}" % labels if labels else "")] = {
                        "labels": s.exemplar.labels,
                        "value": float(s.exemplar.value),
                        "timestamp": float(s.exemplar.timestamp),
                    }
            print(json.dumps(out))
            PY;
        $out = self::command(['python3', '-c', $script], $openmetrics);
        return json_decode($out, true, 512, JSON_THROW_ON_ERROR);
    }

    /** The samples of the store, read by the CLI. */
    protected function dumped(string $store): array
    {
        return self::samples(self::dump($store));
    }
}
