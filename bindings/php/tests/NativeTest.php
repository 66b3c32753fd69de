<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\MetricsRegistrationException;
use Shmetrics\Exception\ShmetricsException;
use Shmetrics\Exception\StorageException;
use Shmetrics\Native;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Tests\Support\TestCase;

final class NativeTest extends TestCase
{
    /** @return array<string, int> every value of the header's enum $enum */
    private static function headerCodes(string $enum = 'shmetrics_result'): array
    {
        $cdef = file_get_contents(Native::cdefPath());
        self::assertSame(1, preg_match("/enum $enum \\{(.*?)\\};/s", $cdef, $m));
        preg_match_all('/SHMETRICS_([A-Z0-9_]+) = (\d+)/', $m[1], $all, PREG_SET_ORDER);
        $codes = [];
        foreach ($all as [, $name, $value]) {
            $codes[$name] = (int) $value;
        }
        return $codes;
    }

    public function testResultCodesMatchTheHeader(): void
    {
        $ours = (new \ReflectionClass(Native::class))->getConstants();
        $ours = array_filter($ours, 'is_int');
        unset($ours['ABI_MAJOR']);
        $ops = array_filter($ours, fn (string $k): bool => str_starts_with($k, 'OP_'), ARRAY_FILTER_USE_KEY);
        self::assertSame(self::headerCodes(), array_diff_key($ours, $ops));
        self::assertSame(self::headerCodes('shmetrics_op'), $ops);
    }

    public function testEveryCodeMapsToAnExceptionWithTheLibrarysMessage(): void
    {
        $invalid = ['INVALID_NAME', 'LABEL_COUNT', 'INVALID_VALUE', 'INVALID_OPTIONS', 'INVALID_UTF8', 'INVALID_ARGUMENT'];
        // Make a real failure so that the thread has a last error.
        try {
            new Shmetrics($this->dir . '/missing', ['create' => false]);
        } catch (StorageException) {
        }
        $message = Native::lastError();
        self::assertStringContainsString('missing', $message);
        foreach (self::headerCodes() as $name => $code) {
            if ($code === Native::OK) {
                continue;
            }
            $e = Native::exception($code, 'doing X');
            self::assertInstanceOf(ShmetricsException::class, $e);
            $want = match (true) {
                in_array($name, $invalid, true) => InvalidArgumentException::class,
                $name === 'CONFLICT' => MetricsRegistrationException::class,
                default => StorageException::class,
            };
            self::assertSame($want, get_class($e), $name);
            self::assertSame($code, $e->getCode());
            self::assertSame("doing X: $message", $e->getMessage());
        }
        self::assertInstanceOf(\InvalidArgumentException::class, Native::exception(Native::INVALID_NAME, 'x'));
    }

    public function testTheStoreOpensOncePerProcessNotPerRequest(): void
    {
        $path = $this->dir . '/requests';
        $out = json_decode(self::command([PHP_BINARY, '-d', 'ffi.enable=1', __DIR__ . '/scripts/requests.php', $path, '20']), true);
        self::assertSame(['distinct_handles' => 1, 'library_mapped' => true], $out);
        $s = $this->dumped($path);
        self::assertSame(20.0, $s['requests_total']);
        $stats = (new Shmetrics($path))->stats();
        self::assertSame(1, $stats['writer_claims_total'], 'one writer slot claimed, not one per request');
    }

    public function testRestrictedFfiSaysWhatToSet(): void
    {
        $out = self::phpWith(
            [],
            'try { new Shmetrics\Storage\Shmetrics("' . $this->dir . '/x"); echo "opened"; } '
                . 'catch (Shmetrics\Exception\StorageException $e) { echo $e->getMessage(); }',
            '0'
        );
        if (Native::extension()) {
            // The extension calls the library without FFI: ffi.enable does not matter.
            self::assertSame('opened', $out);
            return;
        }
        self::assertStringContainsString('PHP FFI is restricted here (ffi.enable=0', $out);
        self::assertStringContainsString('ffi.preload', $out);
    }

    public function testMissingLibrarySaysHowToBuildIt(): void
    {
        $out = self::phpWith(
            [],
            'Shmetrics\Native::configure("/nonexistent/libshmetrics.so"); '
                . 'try { Shmetrics\Native::version(); } '
                . 'catch (Shmetrics\Exception\StorageException $e) { echo $e->getMessage(); }'
        );
        self::assertStringContainsString('cannot load the shmetrics library "/nonexistent/libshmetrics.so"', $out);
        self::assertStringContainsString('cargo build --release -p shmetrics-ffi', $out);
        // The store's own loading (the extension's when it is loaded) says the same.
        $out = self::phpWith(['SHMETRICS_LIBRARY' => '/nonexistent/libshmetrics.so'], $this->openStore());
        self::assertStringContainsString('cannot load the shmetrics library "/nonexistent/libshmetrics.so"', $out);
        self::assertStringContainsString('cargo build --release -p shmetrics-ffi', $out);
    }

    /**
     * Code that opens a store in $this->dir (through the extension when it
     * is loaded, FFI otherwise) and prints "opened", or the refusal.
     */
    private function openStore(): string
    {
        return 'try { new Shmetrics\Storage\Shmetrics("' . $this->dir . '/opened"); echo "opened"; } '
            . 'catch (Shmetrics\Exception\StorageException $e) { echo $e->getMessage(); }';
    }

    public function testScopeHeaderForFfiPreload(): void
    {
        $h = Native::scopeHeader('/opt/lib/libshmetrics.so');
        self::assertStringStartsWith("#define FFI_SCOPE \"SHMETRICS\"\n#define FFI_LIB \"/opt/lib/libshmetrics.so\"\n", $h);
        self::assertStringEndsWith(file_get_contents(Native::cdefPath()), $h);
        $out = self::command([PHP_BINARY, dirname(__DIR__) . '/bin/shmetrics-ffi-header', Native::library()]);
        self::assertSame(Native::scopeHeader(realpath(Native::library())), $out);
        $this->expectException(InvalidArgumentException::class);
        Native::scopeHeader("/bad\"path");
    }

    /**
     * The run with the extension loaded must test its classes, and the run
     * without it the PHP ones: scripts/php-tests.sh runs this file both ways.
     */
    public function testTheExtensionProvidesTheClassesWhenLoaded(): void
    {
        $storage = new Shmetrics($this->dir . '/which');
        foreach ([\Shmetrics\CollectorRegistry::class, \Shmetrics\Counter::class, \Shmetrics\Gauge::class,
            \Shmetrics\Histogram::class, \Shmetrics\Summary::class, Shmetrics::class] as $class) {
            self::assertSame(Native::extension(), (new \ReflectionClass($class))->isInternal(), $class);
        }
        // Snapshot stays PHP in both, over the extension's store handle or FFI.
        self::assertFalse((new \ReflectionClass(\Shmetrics\Snapshot::class))->isInternal());
        self::assertSame(Native::extension(), $storage->store instanceof \Shmetrics\Ext\Store);
        self::assertSame(Native::extension(), $storage->ffi === null);
    }

    public function testVersion(): void
    {
        self::assertMatchesRegularExpression('/^\d+\.\d+\.\d+/', Native::version());
        self::assertStringStartsWith(Native::ABI_MAJOR . '.', Native::version());
    }

    /**
     * Runs $code (after the autoloader) in another PHP with $env added to
     * this one's environment: what it printed.
     *
     * @param array<string, string|false> $env false removes the variable
     */
    private static function phpWith(array $env, string $code, string $ffiEnable = '1'): string
    {
        $full = getenv();
        foreach ($env as $k => $v) {
            if ($v === false) {
                unset($full[$k]);
            } else {
                $full[$k] = $v;
            }
        }
        $p = proc_open(
            [PHP_BINARY, '-d', "ffi.enable=$ffiEnable", '-r', 'require "' . dirname(__DIR__) . '/autoload.php"; ' . $code],
            [1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
            $pipes,
            null,
            $full
        );
        $out = stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
        proc_close($p);
        return $out;
    }

    public function testWithoutTheVariableTheDynamicLoaderFindsTheLibraryByItsSoname(): void
    {
        $lib = "$this->dir/lib";
        $empty = "$this->dir/nolib";
        mkdir($lib);
        mkdir($empty);
        symlink(realpath(Native::library()), "$lib/libshmetrics.so." . Native::ABI_MAJOR);
        $code = 'try { echo "loaded ", Shmetrics\Native::version(); } '
            . 'catch (Shmetrics\Exception\StorageException $e) { echo $e->getMessage(); }';
        $out = self::phpWith(['SHMETRICS_LIBRARY' => false, 'LD_LIBRARY_PATH' => $lib], $code);
        self::assertStringStartsWith('loaded ' . Native::ABI_MAJOR . '.', $out);
        $out = self::phpWith(['SHMETRICS_LIBRARY' => false, 'LD_LIBRARY_PATH' => $lib], $this->openStore());
        self::assertSame('opened', $out);
        foreach ([$code, $this->openStore()] as $c) {
            $out = self::phpWith(['SHMETRICS_LIBRARY' => false, 'LD_LIBRARY_PATH' => $empty], $c);
            self::assertStringContainsString('cannot load the shmetrics library "libshmetrics.so.' . Native::ABI_MAJOR . '"', $out);
            self::assertStringContainsString('"libshmetrics.so"', $out);
        }
    }

    public function testALibraryOfAnotherMajorIsRefusedWithBothVersionsNamed(): void
    {
        $other = getenv('SHMETRICS_OTHER_MAJOR_LIBRARY');
        if (!is_string($other) || $other === '') {
            self::fail('$SHMETRICS_OTHER_MAJOR_LIBRARY is not set: scripts/php-tests.sh sets it to the library '
                . 'scripts/build-other-major.sh builds');
        }
        $next = Native::ABI_MAJOR + 1;
        $version = 'try { Shmetrics\Native::version(); echo "accepted"; } '
            . 'catch (Shmetrics\Exception\StorageException $e) { echo $e->getMessage(); }';
        foreach ([$version, $this->openStore()] as $code) {
            $out = self::phpWith(['SHMETRICS_LIBRARY' => $other], $code);
            self::assertStringContainsString("the shmetrics library $other is version $next.0.0 (major $next)", $out);
            self::assertStringContainsString('this binding is written for major ' . Native::ABI_MAJOR, $out);
        }
    }
}
