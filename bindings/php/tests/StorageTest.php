<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\CollectorRegistry;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\StorageException;
use Shmetrics\Native;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Tests\Support\TestCase;

/** Store files that cannot be used, options, capacity: never a crash, always a message. */
final class StorageTest extends TestCase
{
    private function assertOpenFails(string $path, int $code, string $text, array $options = []): void
    {
        $before = self::fingerprint($path);
        try {
            new Shmetrics($path, $options);
            self::fail("opening $path succeeded");
        } catch (StorageException $e) {
            self::assertSame($code, $e->getCode(), $e->getMessage());
            self::assertStringContainsString(dirname($path), $e->getMessage());
            self::assertStringContainsString($text, $e->getMessage());
        }
        // The file is never changed, let alone reinitialised.
        self::assertSame($before, self::fingerprint($path));
    }

    /**
     * The file's size, times and first MiB (where a store's header and
     * index start, which opening would rewrite to reinitialise it); null
     * when there is none. Not a hash of it all: these files are sparse, up
     * to 18 GB of holes, and hashing them took minutes.
     */
    private static function fingerprint(string $path): ?string
    {
        if (!is_file($path)) {
            return null;
        }
        clearstatcache(true, $path);
        $st = stat($path);
        return sprintf('%d %d %d ', $st['size'], $st['mtime'], $st['ctime'])
            . hash('sha256', (string) file_get_contents($path, false, null, 0, 1 << 20));
    }

    /** A valid store file, made by another process (the CLI cannot make one; PHP can). */
    private function validStoreFile(string $name): string
    {
        $path = $this->dir . "/$name";
        $this->store([], $name);
        return $path;
    }

    public function testMissingFilesAndDirectories(): void
    {
        $this->assertOpenFails($this->dir . '/no/such/dir/store', Native::IO, 'no/such/dir');
        $this->assertOpenFails($this->dir . '/absent', Native::IO, 'absent', ['create' => false]);
    }

    public function testForeignFile(): void
    {
        $path = $this->dir . '/foreign';
        file_put_contents($path, str_repeat('not a store ', 1000));
        $this->assertOpenFails($path, Native::FOREIGN_FILE, 'not a shmetrics store');
        file_put_contents($path, '');
        $this->assertOpenFails($path, Native::FOREIGN_FILE, 'foreign');
    }

    public function testOtherLayoutVersion(): void
    {
        $path = $this->validStoreFile('v');
        $copy = $this->dir . '/v2';
        $bytes = file_get_contents($path, false, null, 0, 1 << 16);
        $bytes = substr_replace($bytes, pack('V', 99), 8, 4);  // layout_version after the 8-byte magic
        file_put_contents($copy, $bytes);
        $this->assertOpenFails($copy, Native::VERSION_MISMATCH, '99');
    }

    public function testCorruptHeader(): void
    {
        $path = $this->validStoreFile('c');
        $copy = $this->dir . '/c2';
        // A sparse copy: the header's pages, then the original size. PHP's
        // copy() writes every byte, 18 GB of zeros into /dev/shm.
        file_put_contents($copy, file_get_contents($path, false, null, 0, 1 << 16));
        $f = fopen($copy, 'r+');
        ftruncate($f, filesize($path));
        fseek($f, 20);
        $b = fread($f, 1);
        fseek($f, 20);
        fwrite($f, chr(ord($b) ^ 0x40));
        fclose($f);
        $this->assertOpenFails($copy, Native::CORRUPT, 'corrupt');
    }

    public function testTruncatedFile(): void
    {
        $path = $this->validStoreFile('t');
        $copy = $this->dir . '/t2';
        file_put_contents($copy, file_get_contents($path, false, null, 0, 1 << 16));
        $this->assertOpenFails($copy, Native::TRUNCATED, 'truncated: the file is 65536 bytes');
    }

    public function testOptions(): void
    {
        foreach ([
            [['max_series' => 10, 'nope' => 1], 'unknown store option "nope"'],
            [['max_series' => -1], 'store option "max_series" must be an integer from 0 to 2^32-1'],
            [['max_series' => 1 << 33], 'from 0 to 2^32-1'],
            [['create' => 'yes'], 'must be a bool'],
        ] as [$options, $text]) {
            try {
                $this->store($options, 'opts');
                self::fail('accepted ' . json_encode($options));
            } catch (InvalidArgumentException $e) {
                self::assertStringContainsString($text, $e->getMessage());
            }
        }
        try {
            $this->store(['max_series' => 0], 'zero');
            self::fail('a store with room for no series was made');
        } catch (InvalidArgumentException $e) {
            self::assertSame(Native::INVALID_OPTIONS, $e->getCode());
        }
        $this->expectException(InvalidArgumentException::class);
        new Shmetrics('');
    }

    public function testAFullStoreRefusesFamiliesAndOverflowsSeries(): void
    {
        $reg = new CollectorRegistry($this->store(['max_families' => 2, 'max_series' => 6]), false);
        $c = $reg->registerCounter('', 'c', 'C.', ['id']);
        $reg->registerGauge('', 'g', 'G.');
        try {
            $reg->registerCounter('', 'third', 'One family too many.');
            self::fail('a third family fitted');
        } catch (StorageException $e) {
            self::assertSame(Native::STORE_FULL, $e->getCode());
        }
        // Series beyond the capacity go to the overflow series: nothing is lost, nothing throws.
        for ($i = 0; $i < 50; $i++) {
            $c->inc(["id$i"]);
        }
        $s = $this->dumped($this->dir . '/store');
        $counted = array_sum(array_filter($s, fn ($k) => str_starts_with($k, 'c{'), ARRAY_FILTER_USE_KEY));
        self::assertSame(50.0, $counted);
        $overflow = $s['c{id="",shmetrics_overflow="true"}'];
        self::assertGreaterThan(0, $overflow);
        self::assertSame((int) $overflow, $reg->getStorage()->stats()['overflows_total']);
    }

    public function testReadOnlyStore(): void
    {
        $path = $this->validStoreFile('ro');
        (new CollectorRegistry($path, false))->registerCounter('', 'c', 'C.')->inc();
        $ro = new Shmetrics($path, ['read_only' => true]);
        // An existing family is found; writing to it is refused.
        $c = new CollectorRegistry($ro, false);
        try {
            $c->registerCounter('', 'c', 'C.')->inc();
            self::fail('a read-only store was written');
        } catch (StorageException $e) {
            self::assertSame(Native::READ_ONLY, $e->getCode());
        }
        try {
            $ro->wipeStorage();
            self::fail('a read-only store was wiped');
        } catch (StorageException $e) {
            self::assertSame(Native::READ_ONLY, $e->getCode());
        }
        self::assertStringContainsString("\nc 1\n", $ro->render());
    }

    /**
     * A store removed, or replaced by a rename, is opened again by the next
     * Storage\Shmetrics of its path in the same process (php-fpm builds one
     * per request), and the updates land in the file the path names.
     */
    public function testAStoreReplacedUnderTheProcessIsOpenedAgain(): void
    {
        $path = $this->dir . '/replaced';
        $hit = function (string $path, int $n = 1): void {
            (new CollectorRegistry(new Shmetrics($path), false))->getOrRegisterCounter('', 'hits', 'Hits.')->incBy($n);
        };
        $hit($path);
        $hit($path);
        self::assertStringContainsString("\nhits 2\n", (new Shmetrics($path))->render());

        unlink($path);
        $hit($path);
        self::assertFileExists($path);
        self::assertStringContainsString("\nhits 1\n", (new Shmetrics($path))->render());

        $other = $this->dir . '/other';
        $hit($other, 10);
        rename($other, $path);
        $hit($path);
        self::assertStringContainsString("\nhits 11\n", (new Shmetrics($path))->render());
        $hit($path);
        self::assertStringContainsString("\nhits 12\n", (new Shmetrics($path))->render());
    }

    public function testStats(): void
    {
        $reg = $this->registry();
        $reg->registerCounter('', 'a', 'A.', ['x'])->inc(['1']);
        $stats = $reg->getStorage()->stats();
        self::assertSame(9, $stats['layout_version']); // writer cells in blocks
        self::assertSame(1, $stats['families']);
        self::assertSame(1, $stats['writers_live']);
        self::assertSame(1, $stats['writer_claims_total']);
        self::assertCount(21, $stats);
        self::assertSame(0, $stats['series_expired_total']);
    }
}
