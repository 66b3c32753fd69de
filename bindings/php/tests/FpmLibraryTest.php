<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Native;
use Shmetrics\Tests\Support\TestCase;

/**
 * The extension loads the library in each php-fpm worker, at its first use,
 * with its pool's settings: a pool's php_admin_value[shmetrics.library] or
 * env[SHMETRICS_LIBRARY] names the library that pool's workers load (two
 * copies of the library in two folders: each pool maps its own), never the
 * one the master's environment names; and a pool that names a missing
 * library gets the binding's StorageException in the request, not a crash.
 * The master loads none. Runs on the extension in both runs of
 * scripts/php-tests.sh ($SHMETRICS_EXTENSION when it is not loaded here).
 */
final class FpmLibraryTest extends TestCase
{
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

    public function testEachPoolLoadsTheLibraryItsSettingsName(): void
    {
        $dir = $this->dir;
        chmod($dir, 0755);
        $library = realpath(Native::library());
        foreach (['ini', 'env'] as $copy) {
            mkdir("$dir/$copy");
            copy($library, "$dir/$copy/libshmetrics.so");
        }
        $pools = [
            'ini' => "php_admin_value[shmetrics.library] = $dir/ini/libshmetrics.so",
            'env' => "env[SHMETRICS_LIBRARY] = $dir/env/libshmetrics.so",
            'missing' => "php_admin_value[shmetrics.library] = $dir/missing/libshmetrics.so",
        ];
        [$base, $master] = $this->serve($pools);
        $store = urlencode("$dir/app.metrics");
        foreach (['ini', 'env'] as $pool) {
            // Twice: the second request is served by a worker that loaded it already, or by another.
            for ($i = 0; $i < 2; $i++) {
                $body = self::get("$base/$pool?store=$store");
                self::assertStringStartsWith('loaded ' . Native::version() . "\n", $body, "pool $pool");
                self::assertSame(["$dir/$pool/libshmetrics.so"], self::mapped($body), "pool $pool: $body");
            }
        }
        $body = self::get("$base/missing?store=$store");
        self::assertStringStartsWith(
            'refused: Shmetrics\Exception\StorageException: cannot load the shmetrics library '
            . "\"$dir/missing/libshmetrics.so\": ",
            $body
        );
        self::assertSame([], self::mapped($body));
        self::assertStringNotContainsString('libshmetrics', (string) file_get_contents("/proc/$master/maps"), 'the master loads no library');
        $log = (string) @file_get_contents("$dir/fpm.log");
        self::assertStringNotContainsString('signal', $log);
        self::assertStringNotContainsString('PHP Fatal', $log);
    }

    /** @return list<string> the "mapped:" paths of a response */
    private static function mapped(string $body): array
    {
        preg_match_all('/^mapped: (.*)$/m', $body, $m);
        return $m[1];
    }

    /**
     * Starts php-fpm with one pool per entry of $pools (its extra lines),
     * behind nginx at /NAME, the extension loaded.
     *
     * @param array<string, string> $pools
     * @return array{string, int} nginx's base URL and php-fpm's master pid
     */
    private function serve(array $pools): array
    {
        $fpmBin = glob('/usr/sbin/php-fpm*')[0] ?? null;
        self::assertNotNull($fpmBin, 'php-fpm is not installed (Debian: apt-get install php-fpm)');
        self::assertFileExists('/usr/sbin/nginx', 'nginx is not installed');
        $dir = $this->dir;
        $root = posix_geteuid() === 0;
        $ini = "error_log = $dir/php-errors.log\n";
        if (!Native::extension()) {
            $ext = getenv('SHMETRICS_EXTENSION');
            self::assertIsString($ext, 'set SHMETRICS_EXTENSION to the built shmetrics.so (scripts/php-tests.sh does)');
            self::assertFileExists($ext);
            $ini .= "extension = $ext\n";
        }
        file_put_contents("$dir/php.ini", $ini);
        $conf = "[global]\nerror_log = $dir/fpm.log\ndaemonize = no\npid = $dir/fpm.pid\n";
        $locations = '';
        $app = __DIR__ . '/fpm/library.php';
        foreach ($pools as $name => $lines) {
            $port = self::freePort();
            $conf .= "[$name]\nlisten = 127.0.0.1:$port\npm = static\npm.max_children = 2\n"
                . "catch_workers_output = yes\n$lines\n" . ($root ? "user = root\n" : '');
            $locations .= "location /$name { include /etc/nginx/fastcgi_params;"
                . " fastcgi_param SCRIPT_FILENAME $app; fastcgi_pass 127.0.0.1:$port; }\n";
        }
        file_put_contents("$dir/fpm.conf", $conf);
        mkdir("$dir/nginx");
        $nginxPort = self::freePort();
        file_put_contents("$dir/nginx/nginx.conf", ($root ? "user root;\n" : '') . <<<CONF
            worker_processes 1;
            error_log $dir/nginx/error.log;
            pid $dir/nginx/nginx.pid;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path $dir/nginx/body;
                fastcgi_temp_path $dir/nginx/fastcgi;
                proxy_temp_path $dir/nginx/proxy;
                uwsgi_temp_path $dir/nginx/uwsgi;
                scgi_temp_path $dir/nginx/scgi;
                server {
                    listen 127.0.0.1:$nginxPort;
                    $locations
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
        $deadline = microtime(true) + 30;
        do {
            $body = @file_get_contents("$base/env?store=" . urlencode("$dir/app.metrics"));
            if ($body !== false && str_contains($body, 'pid: ')) {
                break;
            }
            usleep(100000);
        } while (microtime(true) < $deadline);
        self::assertNotFalse($body, "php-fpm did not answer; see $dir/fpm.log and $dir/fpm.out");
        return [$base, (int) trim((string) file_get_contents("$dir/fpm.pid"))];
    }

    /**
     * @param list<string> $argv
     */
    private function start(array $argv, string $log): void
    {
        $p = proc_open($argv, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes);
        self::assertIsResource($p);
        $this->procs[] = $p;
    }

    private static function get(string $url): string
    {
        $body = file_get_contents($url, false, stream_context_create(['http' => ['timeout' => 20, 'ignore_errors' => true]]));
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
