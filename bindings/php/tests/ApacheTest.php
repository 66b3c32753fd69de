<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Native;
use Shmetrics\Tests\Support\TestCase;

/**
 * Debian's Apache httpd (`apache2`, prefork MPM) with mod_php
 * (`libapache2-mod-php8.2`), started on its own config in a temporary
 * folder (`setsid apache2 -f CONF -DFOREGROUND`), with the setup of
 * docs/php.md's "mod_php (Apache prefork)" section (its Apache and ini
 * lines are read from there): children recycled every
 * MAX_CONNECTIONS connections (MaxConnectionsPerChild), an app counting
 * every request with the native API and with PromPHP's classes on
 * ShmetricsAdapter (tests/apache/app.php), and the exporter
 * (`shmetrics serve`). Under a load of 4 clients, Apache is restarted
 * gracefully (`apache2 -k graceful`, what `apachectl graceful` runs) and a
 * child serving a slow request, already counted, is killed with SIGKILL.
 * The exporter must count exactly the requests that succeeded, plus the
 * killed one.
 *
 * Runs on FFI (with ffi.preload and opcache.preload, and with
 * ffi.enable=true) and, in scripts/php-tests.sh's second run, on the
 * extension (its library named by shmetrics.library, or by Apache's
 * SetEnv without preloading).
 */
final class ApacheTest extends TestCase
{
    private const ROUTES = ['/', '/users', '/orders', '/health'];
    private const CLIENTS = 4;
    private const REQUESTS = 1600;
    private const MAX_CONNECTIONS = 20;

    /** @var list<resource> */
    private array $procs = [];
    private string $conf = '';

    protected function tearDown(): void
    {
        foreach (array_reverse($this->procs) as $p) {
            $status = proc_get_status($p);
            if ($status['running']) {
                // Apache's parent stops its children on SIGTERM.
                posix_kill($status['pid'], SIGTERM);
                for ($i = 0; $i < 100 && proc_get_status($p)['running']; $i++) {
                    usleep(50000);
                }
                if (proc_get_status($p)['running']) {
                    posix_kill($status['pid'], SIGKILL);
                }
            }
            proc_close($p);
        }
        parent::tearDown();
    }

    /** @return iterable<string, array{bool}> */
    public static function setups(): iterable
    {
        yield 'ffi.preload + opcache.preload' => [true];
        yield 'ffi.enable=true' => [false];
    }

    /** @dataProvider setups */
    public function testRecyclingAGracefulRestartAndASigkillUnderLoadCountEveryRequest(bool $preload): void
    {
        [$base, $exporter, $store, $dir, $parent] = $this->serve($preload);
        // mod_php runs the setup configured: FFI calls from preloaded code
        // only (ffi.enable=preload), or from any (ffi.enable=true).
        $body = self::get("$base/setup");
        $setup = json_decode($body, true);
        self::assertIsArray($setup, $body);
        self::assertSame([
            'sapi' => 'apache2handler',
            'preloaded' => $preload,
            'ffi.enable' => $preload ? 'preload' : '1',
            'extension' => Native::extension(),
            'version' => Native::version(),
        ], $setup);

        $per = intdiv(self::REQUESTS, self::CLIENTS);
        $clients = $outs = [];
        for ($c = 0; $c < self::CLIENTS; $c++) {
            $clients[] = proc_open(
                array_merge([PHP_BINARY, __DIR__ . '/fpm/client.php', $base, (string) ($c * $per), (string) $per], self::ROUTES),
                [1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
                $pipes
            );
            $outs[] = $pipes;
        }
        $running = static function () use ($clients): bool {
            foreach ($clients as $p) {
                if (proc_get_status($p)['running']) {
                    return true;
                }
            }
            return false;
        };
        // Under load: a graceful restart once a tenth of the requests are
        // counted, a child killed at two fifths.
        $this->waitForCount($exporter, self::REQUESTS / 10, $dir);
        self::assertTrue($running(), 'the load ended before the graceful restart; raise REQUESTS');
        self::command(['/usr/sbin/apache2', '-f', $this->conf, '-k', 'graceful']);
        $this->waitForCount($exporter, self::REQUESTS * 2 / 5, $dir);
        self::assertTrue($running(), 'the load ended before the SIGKILL; raise REQUESTS');
        // ffi.preload loads the library in Apache's parent, which forks the
        // children; otherwise (ffi.enable=true, the extension) only children load it.
        self::assertSame($preload, str_contains((string) file_get_contents("/proc/$parent/maps"), 'libshmetrics'), 'the parent maps the library');
        // A child serving /slow, counted and in flight, is killed.
        $slow = stream_socket_client(substr($base, 7), $errno, $errstr, 10);
        self::assertIsResource($slow, "connect: $errstr");
        fwrite($slow, "GET /slow HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        for ($i = 0; $i < 300 && !is_file("$dir/slow.pid"); $i++) {
            usleep(50000);
        }
        $victim = (int) @file_get_contents("$dir/slow.pid");
        self::assertContains($victim, self::children($parent), "no child of Apache is serving /slow; logs:\n" . self::logs($dir));
        posix_kill($victim, SIGKILL);
        stream_set_timeout($slow, 10);
        $answer = stream_get_contents($slow);
        self::assertFalse(stream_get_meta_data($slow)['timed_out'], 'the killed child\'s connection stayed open');
        self::assertSame('', $answer, 'the killed child answered');
        fclose($slow);
        $this->waitForCount($exporter, self::REQUESTS * 3 / 5, $dir);
        self::assertTrue($running(), 'the load ended too soon after the SIGKILL; raise REQUESTS');

        $pids = [];
        $failed = array_fill_keys(self::ROUTES, 0);
        foreach ($clients as $i => $p) {
            $out = stream_get_contents($outs[$i][1]);
            $err = stream_get_contents($outs[$i][2]);
            self::assertSame(0, proc_close($p), "client $i: $err");
            $r = json_decode($out, true);
            self::assertIsArray($r, "client $i printed: $out $err");
            foreach ($r['failures'] as $f) {
                $failed[explode(':', $f, 2)[0]]++;
            }
            $pids += array_fill_keys($r['pids'], true);
        }
        // The killed child was serving /slow only: no request of the load failed.
        self::assertSame(0, array_sum($failed), 'failed requests: ' . json_encode($failed) . "; logs:\n" . self::logs($dir));
        self::assertFalse(posix_kill($victim, 0), "child $victim survived SIGKILL");
        // 1,600 requests from children that serve 20 connections each: 80 children at least.
        self::assertGreaterThan(intdiv(self::REQUESTS, self::MAX_CONNECTIONS) - 1, count($pids), 'children were expected to be recycled');
        $log = (string) file_get_contents("$dir/apache-error.log");
        self::assertStringContainsString('Graceful restart requested', $log);
        self::assertSame(2, substr_count($log, 'resuming normal operations'), 'two generations of children');
        self::assertSame($parent, (int) trim((string) file_get_contents("$dir/apache.pid")), 'a graceful restart keeps the parent');

        // What was sent: the warm-up request to "/", then request i of client c to ROUTES[(c*per+i) % n].
        $sent = array_fill_keys(self::ROUTES, 0);
        $sent['/'] = 1;
        for ($i = 0; $i < self::CLIENTS * $per; $i++) {
            $sent[self::ROUTES[$i % count(self::ROUTES)]]++;
        }
        $text = self::get("$exporter/metrics");
        self::assertPromtoolAccepts($text);
        $s = self::samples($text);
        // /slow was counted before it was killed.
        $sent['/slow'] = 1;
        foreach ($sent as $route => $n) {
            foreach (['apache_requests_total', 'promphp_requests_total', 'promphp_request_seconds_count'] as $name) {
                self::assertSame((float) $n, $s["$name{route=\"$route\"}"] ?? null, "$name of $route");
            }
            self::assertSame($s["promphp_request_seconds_count{route=\"$route\"}"], $s["promphp_request_seconds_bucket{route=\"$route\",le=\"+Inf\"}"]);
        }
        // livesum: the killed child's request, left in flight, is not counted.
        self::assertSame(0.0, $s['apache_inflight'], 'livesum: nothing in flight');
        self::assertFalse(is_file("$dir/php-errors.log") && filesize("$dir/php-errors.log") > 0, (string) @file_get_contents("$dir/php-errors.log"));
        self::assertStringNotContainsString('PHP Fatal', $log);
        self::assertStringNotContainsString('PHP Warning', $log);
    }

    /** @return list<int> the pids of $parent's children */
    private static function children(int $parent): array
    {
        $list = trim((string) @file_get_contents("/proc/$parent/task/$parent/children"));
        return $list === '' ? [] : array_map('intval', explode(' ', $list));
    }

    /** Waits (at most 60 s) until the exporter counts $n native requests in all. */
    private function waitForCount(string $exporter, int|float $n, string $dir): void
    {
        $deadline = microtime(true) + 60;
        $got = 0.0;
        while (microtime(true) < $deadline) {
            $body = @file_get_contents("$exporter/metrics");
            if ($body !== false) {
                $got = array_sum(array_filter(
                    self::samples($body),
                    static fn (string $k) => str_starts_with($k, 'apache_requests_total{'),
                    ARRAY_FILTER_USE_KEY
                ));
                if ($got >= $n) {
                    return;
                }
            }
            usleep(20000);
        }
        self::fail("the exporter counted $got requests, not $n, within 60 s; logs:\n" . self::logs($dir));
    }

    /** @return list<string> the ```apache blocks of docs/php.md */
    private static function docApacheBlocks(): array
    {
        $doc = (string) file_get_contents(dirname(__DIR__, 3) . '/docs/php.md');
        preg_match_all('/```apache\n(.*?)```/s', $doc, $m);
        self::assertCount(2, $m[1], 'docs/php.md should have two apache blocks');
        return $m[1];
    }

    /** @return list<string> the ```ini blocks of docs/php.md */
    private static function docIniBlocks(): array
    {
        $doc = (string) file_get_contents(dirname(__DIR__, 3) . '/docs/php.md');
        preg_match_all('/```ini\n(.*?)```/s', $doc, $m);
        return $m[1];
    }

    /**
     * Starts Apache (prefork, mod_php) on a free loopback port with the
     * setup of docs/php.md ($preload: ffi.preload and opcache.preload, else
     * ffi.enable=true), and the exporter on the store; sends one warm-up
     * request to "/".
     *
     * @return array{string, string, string, string, int} Apache's and the exporter's base URLs, the store, the folder, the parent's pid
     */
    private function serve(bool $preload): array
    {
        foreach (['/usr/sbin/apache2', '/usr/lib/apache2/modules/libphp8.2.so'] as $need) {
            if (!is_file($need)) {
                self::fail("$need is missing (Debian: apt-get install apache2 libapache2-mod-php8.2); scripts/php-tests.sh installs it");
            }
        }
        $root = posix_geteuid() === 0;
        // Apache will not run its children as root: they run as www-data then.
        $user = $root ? 'www-data' : posix_getpwuid(posix_geteuid())['name'];
        $dir = $this->dir;
        chmod($dir, 0755);
        if ($root) {
            chown($dir, $user);
        }
        $store = "$dir/app.metrics";
        $library = realpath(Native::library());
        $header = "$dir/shmetrics.h";
        $bindings = dirname(__DIR__);
        $port = self::freePort();
        $substitute = fn (string $s): string => strtr($s, [
            '/etc/php/8.2/shmetrics.h' => $header,
            '/srv/shmetrics/bindings/php/preload.php' => __DIR__ . '/apache/preload.php',
            '/srv/shmetrics/bindings/php' => $bindings,
            '/srv/myapp/public' => __DIR__ . '/apache',
            '/index.php' => '/app.php',
            'www-data' => $user,
            '/dev/shm/myapp.metrics' => $store,
            '/usr/local/lib/libshmetrics.so' => $library,
        ]);
        [$preloadIni, , $runtimeIni, $extensionIni] = array_map($substitute, self::docIniBlocks());
        [$apacheSite, $apacheMpm] = array_map($substitute, self::docApacheBlocks());
        if ($preload) {
            file_put_contents($header, self::command([PHP_BINARY, "$bindings/bin/shmetrics-ffi-header", $library]));
            $phpIni = $preloadIni;
            $env = '';
        } else {
            // php.ini's lines of the runtime setup; Apache's SetEnv for the library.
            $phpIni = implode("\n", preg_grep('/^(ffi\.|;)/', explode("\n", $runtimeIni)));
            $env = "SetEnv SHMETRICS_LIBRARY $library\n";
        }
        if (Native::extension()) {
            // The extension's lines of docs/php.md, but `extension =`:
            // scripts/php-tests.sh loads it through $PHP_INI_SCAN_DIR.
            // Without preloading, its library comes from Apache's SetEnv
            // SHMETRICS_LIBRARY instead of shmetrics.library.
            $lines = preg_grep('/^extension\s*=/', explode("\n", $extensionIni), PREG_GREP_INVERT);
            if (!$preload) {
                $lines = preg_grep('/^shmetrics\.library\s*=/', $lines, PREG_GREP_INVERT);
            }
            $phpIni .= "\n" . implode("\n", $lines);
        }
        $phpIni .= "\nerror_log = $dir/php-errors.log\nlog_errors = on\ndisplay_errors = on\n";
        file_put_contents("$dir/php.ini", $phpIni);
        self::assertStringContainsString('MaxConnectionsPerChild', $apacheMpm);
        $apacheMpm = preg_replace('/^(\s*MaxConnectionsPerChild\s+)\d+/m', '${1}' . self::MAX_CONNECTIONS, $apacheMpm);
        $this->conf = "$dir/apache2.conf";
        file_put_contents($this->conf, <<<CONF
            # What Debian's /etc/apache2/apache2.conf sets up, in this folder.
            ServerRoot /etc/apache2
            ServerName 127.0.0.1
            Listen 127.0.0.1:$port
            PidFile $dir/apache.pid
            DefaultRuntimeDir $dir
            Mutex file:$dir default
            ErrorLog $dir/apache-error.log
            LogLevel notice
            User $user
            Group $user
            # What `a2enmod mpm_prefork php8.2` enables.
            LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so
            LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
            LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
            LoadModule env_module /usr/lib/apache2/modules/mod_env.so
            LoadModule php_module /usr/lib/apache2/modules/libphp8.2.so
            Include /etc/apache2/mods-available/php8.2.conf
            KeepAlive Off
            PHPIniDir $dir
            $env
            $apacheMpm
            $apacheSite

            CONF);
        $envVars = ['PATH' => (string) getenv('PATH'), 'PROMPHP_DIR' => (string) getenv('PROMPHP_DIR')]
            + array_filter(['PHP_INI_SCAN_DIR' => getenv('PHP_INI_SCAN_DIR'), 'ASAN_OPTIONS' => getenv('ASAN_OPTIONS'),
                'LD_PRELOAD' => getenv('LD_PRELOAD'), 'USE_ZEND_ALLOC' => getenv('USE_ZEND_ALLOC'),
                'ZEND_DONT_UNLOAD_MODULES' => getenv('ZEND_DONT_UNLOAD_MODULES')]);
        self::assertNotSame('', $envVars['PROMPHP_DIR'], 'set PROMPHP_DIR (scripts/php-tests.sh does)');
        self::command(['/usr/sbin/apache2', '-f', $this->conf, '-t'], null, $envVars);
        // In a session of its own (setsid execs it, same pid): prefork's
        // parent signals its whole process group on restart and stop.
        $p = proc_open(['setsid', '/usr/sbin/apache2', '-f', $this->conf, '-DFOREGROUND'],
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', "$dir/apache.out", 'a'], 2 => ['file', "$dir/apache.out", 'a']],
            $pipes, null, $envVars);
        self::assertIsResource($p);
        $this->procs[] = $p;
        $base = "http://127.0.0.1:$port";
        $this->waitFor("$base/", 'Apache', $dir);

        $exporterPort = self::freePort();
        $exporter = "http://127.0.0.1:$exporterPort";
        // As root, the exporter is told the store's owner: the children's user.
        $owner = $root ? ['--store.owner', $user] : [];
        $e = proc_open(array_merge([self::bin(), 'serve', '--store', $store, '--listen', "127.0.0.1:$exporterPort"], $owner),
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', "$dir/exporter.out", 'a'], 2 => ['file', "$dir/exporter.out", 'a']], $pipes);
        self::assertIsResource($e);
        $this->procs[] = $e;
        $this->waitFor("$exporter/healthz", 'the exporter', $dir);
        return [$base, $exporter, $store, $dir, proc_get_status($p)['pid']];
    }

    private function waitFor(string $url, string $what, string $dir): void
    {
        $deadline = microtime(true) + 30;
        while (microtime(true) < $deadline) {
            $body = @file_get_contents($url, false, stream_context_create(['http' => ['timeout' => 2, 'ignore_errors' => true]]));
            if ($body !== false && isset($http_response_header[0]) && str_contains($http_response_header[0], ' 200')) {
                return;
            }
            foreach ($this->procs as $p) {
                if (!proc_get_status($p)['running']) {
                    self::fail("$what: a process exited; logs in $dir:\n" . self::logs($dir));
                }
            }
            usleep(100000);
        }
        self::fail("$what did not answer $url within 30 s; logs:\n" . self::logs($dir));
    }

    private static function logs(string $dir): string
    {
        $out = '';
        foreach (glob("$dir/{*.log,*.out,*.conf,php.ini}", GLOB_BRACE) as $f) {
            $out .= "== $f\n" . file_get_contents($f);
        }
        return $out;
    }

    private static function get(string $url): string
    {
        $body = file_get_contents($url, false, stream_context_create(['http' => ['timeout' => 20]]));
        self::assertNotFalse($body, "GET $url");
        return $body;
    }

    private static function freePort(): int
    {
        $s = stream_socket_server('tcp://127.0.0.1:0');
        $name = stream_socket_get_name($s, false);
        fclose($s);
        return (int) substr($name, strrpos($name, ':') + 1);
    }
}
