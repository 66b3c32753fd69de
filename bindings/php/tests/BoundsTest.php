<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\CollectorRegistry;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exception\ShmetricsException;
use Shmetrics\Native;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Summary;
use Shmetrics\Tests\Support\TestCase;

/**
 * Integers out of the range of the C field they go to are refused with
 * the binding's InvalidArgumentException, by the FFI classes and the
 * extension alike, never cut to their low bits: a summary's maxAgeSeconds
 * (milliseconds in a u64), the store options (u32 and u64), an exposition
 * format (u32).
 */
final class BoundsTest extends TestCase
{
    /** @return iterable<string, array{int}> */
    public static function maxAges(): iterable
    {
        // 2^64 / 1000 + 1 seconds: in milliseconds, 2^64 + 384, which a u64 keeps as 384 ms.
        yield 'wraps to 384 ms' => [18446744073709552];
        yield 'first past the i64 milliseconds' => [intdiv(PHP_INT_MAX, 1000) + 1];
        yield 'PHP_INT_MAX' => [PHP_INT_MAX];
    }

    /** @dataProvider maxAges */
    public function testAMaxAgeBeyondWhatMillisecondsHoldIsRefused(int $maxAge): void
    {
        $storage = $this->store();
        $registry = new CollectorRegistry($storage, false);
        $attempts = [
            'new Summary' => fn () => new Summary($storage, 'app', 'latency', 'Latency.', [], $maxAge),
            'registerSummary' => fn () => $registry->registerSummary('app', 'latency', 'Latency.', [], $maxAge),
            'getOrRegisterSummary' => fn () => $registry->getOrRegisterSummary('app', 'latency', 'Latency.', [], $maxAge),
        ];
        foreach ($attempts as $what => $attempt) {
            try {
                $attempt();
                self::fail("$what with maxAgeSeconds $maxAge was accepted");
            } catch (InvalidArgumentException $e) {
                self::assertStringContainsString("maxAgeSeconds must be from 1 to", $e->getMessage(), $what);
                self::assertStringContainsString((string) $maxAge, $e->getMessage(), $what);
            }
        }
        self::assertSame(0, $storage->stats()['families'], 'nothing was registered');
        // The largest that fits is the store's to judge: it refuses a window past its limit.
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('between 1 ms and 49 days');
        new Summary($storage, 'app', 'latency', 'Latency.', [], intdiv(PHP_INT_MAX, 1000));
    }

    /** @return iterable<string, array{array<string, mixed>}> */
    public static function badOptions(): iterable
    {
        yield 'u32 past 2^32' => [['max_series' => 2 ** 32 + 10]];
        yield 'u32 at 2^32' => [['max_families' => 2 ** 32]];
        yield 'negative mode' => [['mode' => -1]];
        yield 'negative u64' => [['label_bytes' => -1]];
        yield 'negative cells' => [['cells_per_writer' => PHP_INT_MIN]];
        yield 'string for an integer' => [['max_writers' => '8']];
        yield 'int for a bool' => [['create' => 1]];
        yield 'unknown option' => [['max_serie' => 10]];
    }

    /**
     * @dataProvider badOptions
     * @param array<string, mixed> $options
     */
    public function testStoreOptionsOutOfRangeAreRefusedByEveryEntryPoint(array $options): void
    {
        $path = $this->dir . '/store';
        $entries = ['new Shmetrics' => fn () => new Shmetrics($path, $options)];
        if (Native::extension()) {
            $entries['Shmetrics\Ext\open'] = fn () => \Shmetrics\Ext\open($path, $options);
        }
        foreach ($entries as $what => $open) {
            try {
                $open();
                self::fail("$what accepted " . var_export($options, true));
            } catch (InvalidArgumentException $e) {
                self::assertStringContainsString('store option', $e->getMessage(), $what);
            }
            self::assertFileDoesNotExist($path, "$what created the store");
        }
    }

    /** @return iterable<string, array{int}> */
    public static function formats(): iterable
    {
        yield '2^32 (0 in a u32)' => [2 ** 32];
        yield '2^32 + 1 (1 in a u32)' => [2 ** 32 + 1];
        yield '-1' => [-1];
        yield 'PHP_INT_MIN' => [PHP_INT_MIN];
        yield 'PHP_INT_MAX' => [PHP_INT_MAX];
        yield "2 (client_ruby's text, not a PHP format)" => [2];
        yield '5 (no such format)' => [5];
    }

    /** @dataProvider formats */
    public function testAFormatOutOfRangeIsNoFormat(int $format): void
    {
        $storage = $this->store();
        try {
            $storage->render($format);
            self::fail("render($format) rendered");
        } catch (ShmetricsException $e) {
            self::assertInstanceOf(InvalidArgumentException::class, $e);
        }
        try {
            $storage->contentType($format);
            self::fail("contentType($format) answered");
        } catch (InvalidArgumentException $e) {
            self::assertStringContainsString("unknown exposition format $format", $e->getMessage());
        }
        if (Native::extension()) {
            self::assertNull(\Shmetrics\Ext\content_type($format));
            self::assertNotSame(Native::OK, \Shmetrics\Ext\render($storage->store, $format, $out));
            self::assertNull($out);
        }
    }

    public function testExponentialBucketsPastTheStoresLimitAreRefused(): void
    {
        self::assertCount(512, \Shmetrics\Histogram::exponentialBuckets(1, 1.01, 512));
        foreach ([513, PHP_INT_MAX] as $n) {
            try {
                \Shmetrics\Histogram::exponentialBuckets(1, 2, $n);
                self::fail("exponentialBuckets(1, 2, $n) was accepted");
            } catch (InvalidArgumentException $e) {
                self::assertStringContainsString("must be from 1 to 512 (the store's limit), got $n", $e->getMessage());
            }
        }
    }
}
