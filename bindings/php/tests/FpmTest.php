<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Native;
use Shmetrics\Tests\Support\TestCase;

/**
 * Debian's php-fpm behind a real nginx (fastcgi_pass), with the setups of
 * docs/php.md: a static pool of 4 workers that restart every 50 requests,
 * 3,000 requests from 4 clients, and the exporter (`shmetrics serve`) as a
 * separate process. The exporter must show every request counted once.
 *
 * The php.ini and pool lines are read from docs/php.md, so the documented
 * setup is the tested one.
 */
final class FpmTest extends TestCase
{
    private const ROUTES = ['/', '/users', '/orders', '/health'];
    private const CLIENTS = 4;
    private const REQUESTS = 3000;
    private const MAX_REQUESTS = 50;

    /** @var list<resource> */
    private array $procs = [];

    protected function tearDown(): void
    {
        foreach (array_reverse($this->procs) as $p) {
            $status = proc_get_status($p);
            if ($status['running']) {
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

    /** @return list<string> the ```ini blocks of docs/php.md */
    private static function docIniBlocks(): array
    {
        $doc = file_get_contents(dirname(__DIR__, 3) . '/docs/php.md');
        preg_match_all('/```ini\n(.*?)```/s', $doc, $m);
        self::assertCount(4, $m[1], 'docs/php.md should have four ini blocks');
        return $m[1];
    }

    /** @return iterable<string, array{bool}> */
    public static function setups(): iterable
    {
        yield 'ffi.preload + opcache.preload' => [true];
        yield 'ffi.enable=true' => [false];
    }

    /** @dataProvider setups */
    public function testWorkersRestartingUnderLoadCountEveryRequest(bool $preload): void
    {
        [$base, $exporter, $store, $dir] = $this->serve($preload, self::MAX_REQUESTS);

        // The load: CLIENTS processes at once.
        $per = intdiv(self::REQUESTS, self::CLIENTS);
        $clients = [];
        for ($c = 0; $c < self::CLIENTS; $c++) {
            $clients[] = proc_open(
                array_merge([PHP_BINARY, __DIR__ . '/fpm/client.php', $base, (string) ($c * $per), (string) $per], self::ROUTES),
                [1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
                $pipes
            );
            $outs[] = $pipes;
        }
        $pids = [];
        foreach ($clients as $i => $p) {
            $out = stream_get_contents($outs[$i][1]);
            $err = stream_get_contents($outs[$i][2]);
            self::assertSame(0, proc_close($p), "client $i: $err");
            $r = json_decode($out, true);
            self::assertIsArray($r, "client $i printed: $out $err");
            self::assertSame([], $r['failures'], "client $i had failed requests; see $dir/fpm.log");
            $pids += array_fill_keys($r['pids'], true);
        }
        $served = count($pids);
        self::assertGreaterThan(4 + 4, $served, "workers were expected to restart; $served pids served");

        // What was sent: the warm-up request to "/", then request i of client c to ROUTES[(c*per+i) % n].
        $sent = array_fill_keys(self::ROUTES, 0);
        $sent['/'] = 1;
        for ($i = 0; $i < self::CLIENTS * $per; $i++) {
            $sent[self::ROUTES[$i % count(self::ROUTES)]]++;
        }

        $text = self::get("$exporter/metrics");
        self::assertPromtoolAccepts($text);
        // What Prometheus 2.42 asks for by default (OpenMetrics first): the
        // page of PromPHP's families is still the text format 0.0.4 PromPHP
        // served, with nothing added (no _created, no exporter metrics).
        $ctx = stream_context_create(['http' => ['header' => 'Accept: application/openmetrics-text;version=1.0.0,'
            . 'application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1']]);
        $negotiated = file_get_contents("$exporter/metrics", false, $ctx);
        self::assertNotFalse($negotiated);
        $type = implode("\n", array_filter($http_response_header, static fn ($h) => stripos($h, 'content-type:') === 0));
        self::assertStringContainsString('text/plain; version=0.0.4', $type);
        self::assertStringNotContainsString('_created', $negotiated);
        self::assertStringNotContainsString('shmetrics_', $negotiated);
        self::assertStringNotContainsString('# EOF', $negotiated);
        $s = self::samples($text);
        foreach ($sent as $route => $n) {
            self::assertSame((float) $n, $s["fpm_requests_total{route=\"$route\",status=\"200\"}"] ?? null, "requests to $route");
            $buckets = [];
            foreach (['0.001', '0.01', '0.1', '1', '+Inf'] as $le) {
                $buckets[] = $s["fpm_request_seconds_bucket{route=\"$route\",le=\"$le\"}"];
            }
            $sorted = $buckets;
            sort($sorted);
            self::assertSame($sorted, $buckets, "cumulative buckets of $route");
            self::assertSame((float) $n, end($buckets));
            self::assertSame((float) $n, $s["fpm_request_seconds_count{route=\"$route\"}"]);
        }
        self::assertSame(0.0, $s['fpm_inflight'], 'livesum: nothing in flight');
        self::assertSame(1.0, $s['php_info{version="' . PHP_VERSION . '"}']);
        // Once per worker process, not once per request: a worker claims one
        // writer slot (on its first update), whatever the number of requests.
        // (The exporter's own metrics are on their own page.)
        $s = self::samples(self::get("$exporter/exporter-metrics"));
        $claims = $s['shmetrics_store_writer_claims_total'];
        // (+1: the worker that served the warm-up request may have served no other.)
        self::assertGreaterThanOrEqual($served, $claims);
        self::assertLessThanOrEqual($served + 1, $claims, "$claims slot claims for $served worker processes");
        self::assertLessThanOrEqual(4 + 1, $s['shmetrics_store_writers{state="live"}'] ?? 0);
        // The CLI reads the same.
        $dumped = $this->dumped($store);
        foreach ($sent as $route => $n) {
            self::assertSame((float) $n, $dumped["fpm_requests_total{route=\"$route\",status=\"200\"}"]);
        }
        self::assertStringNotContainsString('PHP Fatal', (string) @file_get_contents("$dir/fpm.log"));
        self::assertFalse(is_file("$dir/php-errors.log") && filesize("$dir/php-errors.log") > 0, (string) @file_get_contents("$dir/php-errors.log"));
        self::assertSame([], array_filter(
            explode("\n", (string) @file_get_contents("$dir/fpm.log")),
            fn ($l) => str_contains($l, 'WARNING') && !str_contains($l, 'catch_workers_output')
        ));
    }

    /**
     * A store removed, or replaced by a rename, while php-fpm's workers
     * keep running (pm.max_requests = 0: they never restart) is opened
     * again at each worker's next request, so the updates land in the file
     * the exporter serves (it follows the path too).
     */
    public function testAStoreReplacedMidRunIsReopened(): void
    {
        [$base, $exporter, $store, $dir] = $this->serve(true, 0);
        $send = fn (int $n) => self::sendUsers($base, $n, $dir);
        // What the exporter serves, once it is $want or after 15 s.
        $served = function (float $want) use ($exporter): ?float {
            $deadline = microtime(true) + 15;
            do {
                $got = self::samples(self::get("$exporter/metrics"))['fpm_requests_total{route="/users",status="200"}'] ?? null;
                if ($got === $want) {
                    return $got;
                }
                usleep(100000);
            } while (microtime(true) < $deadline);
            return $got;
        };
        $send(100);
        self::assertSame(100.0, $served(100.0));

        unlink($store);
        $send(60);
        self::assertSame(60.0, $served(60.0), 'after the store was removed, the requests count in the new file');

        $other = "$dir/other.metrics";
        new \Shmetrics\Storage\Shmetrics($other);
        rename($other, $store);
        $send(40);
        self::assertSame(40.0, $served(40.0), 'after another store was renamed over it, the requests count in that one');
        self::assertStringNotContainsString('PHP Fatal', (string) @file_get_contents("$dir/fpm.log"));
        self::assertFalse(is_file("$dir/php-errors.log") && filesize("$dir/php-errors.log") > 0, (string) @file_get_contents("$dir/php-errors.log"));
    }

    /**
     * What a worker keeps from one request to the next (the extension's
     * definitions and series handles; FFI's library caches) follows the
     * store: after a wipe by another process, each worker's next update
     * finds its handles stale and counts again from zero, every request
     * exactly once; and a definition that conflicts with the one the
     * workers registered in earlier requests is refused, not taken from
     * what they kept.
     */
    public function testWhatWorkersKeepAcrossRequestsFollowsAWipeAndRefusesAConflict(): void
    {
        [$base, $exporter, $store, $dir] = $this->serve(true, 0);
        $send = fn (int $n) => self::sendUsers($base, $n, $dir);
        // What the exporter serves, once it is $want or after 15 s.
        $served = function (float $want) use ($exporter): array {
            $deadline = microtime(true) + 15;
            do {
                $s = self::samples(self::get("$exporter/metrics"));
                $got = [$s['fpm_requests_total{route="/users",status="200"}'] ?? null,
                    $s['fpm_request_seconds_count{route="/users"}'] ?? null];
                if ($got === [$want, $want]) {
                    return $got;
                }
                usleep(100000);
            } while (microtime(true) < $deadline);
            return $got;
        };
        $send(200);
        self::assertSame([200.0, 200.0], $served(200.0));
        foreach ([120, 80, 1] as $round => $n) {
            self::command([PHP_BINARY, __DIR__ . '/scripts/wipe.php', $store]);
            $send($n);
            self::assertSame([(float) $n, (float) $n], $served((float) $n), "requests after wipe $round");
            self::assertSame(0.0, self::samples(self::get("$exporter/metrics"))['fpm_inflight'] ?? null);
        }
        // Every worker has registered fpm_requests_total with [route, status] by now (4 workers, 401 requests).
        for ($i = 0; $i < 8; $i++) {
            $body = self::get("$base/conflict");
            self::assertMatchesRegularExpression('/^\d+\nrefused: (.*)/', $body);
            self::assertStringContainsString(
                'refused: ' . \Shmetrics\Exception\MetricsRegistrationException::class . ': ',
                $body
            );
            self::assertStringContainsString('"fpm_requests" is already registered', $body);
        }
        self::assertSame(8.0, self::samples(self::get("$exporter/metrics"))['fpm_requests_total{route="/conflict",status="200"}'] ?? null);
        self::assertStringNotContainsString('PHP Fatal', (string) @file_get_contents("$dir/fpm.log"));
        self::assertFalse(is_file("$dir/php-errors.log") && filesize("$dir/php-errors.log") > 0, (string) @file_get_contents("$dir/php-errors.log"));
    }

    /** Sends $n requests to /users, one at a time; each must succeed. */
    private static function sendUsers(string $base, int $n, string $dir): void
    {
        $out = self::command([PHP_BINARY, __DIR__ . '/fpm/client.php', $base, '0', (string) $n, '/users']);
        $r = json_decode($out, true);
        self::assertIsArray($r, "the client printed: $out");
        self::assertSame([], $r['failures'], "failed requests; see $dir/fpm.log");
    }

    /**
     * Starts php-fpm (4 static workers restarting every $maxRequests
     * requests, 0 for never) behind nginx, with the setup of docs/php.md
     * ($preload: ffi.preload and opcache.preload, else ffi.enable=true),
     * and the exporter on the store; sends one warm-up request to "/".
     *
     * @return array{string, string, string, string} nginx's and the exporter's base URLs, the store, the folder
     */
    private function serve(bool $preload, int $maxRequests): array
    {
        $fpmBin = glob('/usr/sbin/php-fpm*')[0] ?? null;
        foreach (['php-fpm' => $fpmBin, 'nginx' => is_executable('/usr/sbin/nginx') ? '/usr/sbin/nginx' : null] as $what => $bin) {
            if ($bin === null) {
                self::fail("$what is not installed (Debian: apt-get install php-fpm nginx); scripts/php-tests.sh installs it");
            }
        }
        $root = posix_geteuid() === 0;
        $user = posix_getpwuid(posix_geteuid())['name'];
        $dir = $this->dir;
        chmod($dir, 0755);
        $store = "$dir/app.metrics";
        $library = realpath(Native::library());
        $header = "$dir/shmetrics.h";
        $bindings = dirname(__DIR__);
        $substitute = fn (string $s): string => strtr($s, [
            '/etc/php/8.2/shmetrics.h' => $header,
            '/srv/shmetrics/bindings/php' => $bindings,
            'www-data' => $user,
            '/dev/shm/myapp.metrics' => $store,
            '/usr/local/lib/libshmetrics.so' => $library,
        ]);
        [$preloadIni, $poolIni, $runtimeIni, $extensionIni] = array_map($substitute, self::docIniBlocks());
        if ($preload) {
            // As the doc says: bin/shmetrics-ffi-header LIBRARY > header.
            file_put_contents($header, self::command([PHP_BINARY, "$bindings/bin/shmetrics-ffi-header", $library]));
            $phpIni = $preloadIni;
            $poolEnv = $poolIni;
        } else {
            $lines = explode("\n", $runtimeIni);
            $phpIni = implode("\n", preg_grep('/^(ffi\.|;)/', $lines));
            $poolEnv = implode("\n", preg_grep('/^env\[/', $lines));
            self::assertStringContainsString('SHMETRICS_LIBRARY', $poolEnv);
        }
        if (Native::extension()) {
            // The extension's lines of docs/php.md, but `extension =`:
            // scripts/php-tests.sh loads it through $PHP_INI_SCAN_DIR.
            self::assertMatchesRegularExpression('/^extension = shmetrics\.so$/m', $extensionIni);
            $phpIni .= "\n" . implode("\n", preg_grep('/^extension\s*=/', explode("\n", $extensionIni), PREG_GREP_INVERT));
        }
        file_put_contents("$dir/php.ini", $phpIni);
        $fpmPort = self::freePort();
        $nginxPort = self::freePort();
        $exporterPort = self::freePort();
        $max = $maxRequests;
        file_put_contents("$dir/fpm.conf", <<<CONF
            [global]
            error_log = $dir/fpm.log
            daemonize = no
            [app]
            listen = 127.0.0.1:$fpmPort
            pm = static
            pm.max_children = 4
            pm.max_requests = $max
            catch_workers_output = yes
            php_admin_value[error_log] = $dir/php-errors.log
            php_admin_flag[log_errors] = on
            php_admin_flag[display_errors] = on
            $poolEnv

            CONF . ($root ? "user = root\n" : ''));
        mkdir("$dir/nginx");
        $app = __DIR__ . '/fpm/app.php';
        file_put_contents("$dir/nginx/nginx.conf", ($root ? "user root;\n" : '') . <<<CONF
            worker_processes 2;
            error_log $dir/nginx/error.log;
            pid $dir/nginx/nginx.pid;
            events { worker_connections 512; }
            http {
                access_log off;
                client_body_temp_path $dir/nginx/body;
                fastcgi_temp_path $dir/nginx/fastcgi;
                proxy_temp_path $dir/nginx/proxy;
                uwsgi_temp_path $dir/nginx/uwsgi;
                scgi_temp_path $dir/nginx/scgi;
                server {
                    listen 127.0.0.1:$nginxPort;
                    location / {
                        include /etc/nginx/fastcgi_params;
                        fastcgi_param SCRIPT_FILENAME $app;
                        fastcgi_pass 127.0.0.1:$fpmPort;
                    }
                }
            }

            CONF);

        $fpmArgs = [$fpmBin, '--nodaemonize', '-c', "$dir/php.ini", '-y', "$dir/fpm.conf"];
        if ($root) {
            $fpmArgs[] = '--allow-to-run-as-root';
        }
        $this->start($fpmArgs, "$dir/fpm.out");
        $this->start(['/usr/sbin/nginx', '-p', "$dir/nginx", '-c', "$dir/nginx/nginx.conf", '-g', 'daemon off;'], "$dir/nginx.out");
        $base = "http://127.0.0.1:$nginxPort";
        $this->waitFor($base . '/', "nginx + php-fpm (see $dir/fpm.log)", $dir);

        $exporter = "http://127.0.0.1:$exporterPort";
        $this->start([self::bin(), 'serve', '--store', $store, '--listen', "127.0.0.1:$exporterPort"], "$dir/exporter.out");
        $this->waitFor("$exporter/healthz", 'the exporter', $dir);

        return [$base, $exporter, $store, $dir];
    }

    /**
     * @param list<string> $argv
     * @return resource
     */
    private function start(array $argv, string $log)
    {
        $p = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes);
        self::assertIsResource($p);
        $this->procs[] = $p;
        return $p;
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
        foreach (glob("$dir/{*.log,*.out,nginx/*.log}", GLOB_BRACE) as $f) {
            $out .= "== $f\n" . file_get_contents($f);
        }
        return $out;
    }

    private static function get(string $url): string
    {
        $body = file_get_contents($url);
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
