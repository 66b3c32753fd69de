<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Native;
use Shmetrics\Snapshot;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Tests\Support\TestCase;

/**
 * What the API fuzzer (tests/fuzz) found, each as a plain test, on FFI and
 * on the extension alike (and tests/promphp/AdapterTest's
 * testTheAdaptersUpdatesAreOfTheirMethodsType).
 */
final class FuzzFindingsTest extends TestCase
{
    public function testALabelValueThatCannotBeAStringIsRefusedByTheBinding(): void
    {
        $registry = $this->registry();
        $counter = $registry->getOrRegisterCounter('app', 'requests', 'Requests.', ['route']);
        $histogram = $registry->getOrRegisterHistogram('app', 'seconds', 'Seconds.', ['route'], [1], null, true);
        $updates = [
            'inc' => fn ($v) => $counter->inc([$v]),
            'inc with an exemplar' => fn ($v) => $counter->inc([$v], ['trace_id' => 'a']),
            'observe' => fn ($v) => $histogram->observe(1, [$v]),
            'observe with an exemplar' => fn ($v) => $histogram->observe(1, [$v], ['trace_id' => 'a']),
        ];
        foreach ($updates as $what => $update) {
            foreach ([new \stdClass(), new \ArrayObject([1]), static fn () => 1] as $value) {
                try {
                    $update($value);
                    self::fail("$what accepted a " . get_debug_type($value));
                } catch (InvalidArgumentException $e) {
                    self::assertStringContainsString(
                        'label values must be strings or numbers, got ' . get_debug_type($value),
                        $e->getMessage(),
                        $what
                    );
                }
            }
        }
        self::assertSame([], array_filter(array_keys($this->dumped($this->dir . '/store')), fn ($k) => str_contains($k, 'app_')));
    }

    public function testAStorageMadeWithoutItsConstructorSaysSo(): void
    {
        if (Native::extension()) {
            // An internal final class: PHP refuses.
            $this->expectException(\ReflectionException::class);
            $this->expectExceptionMessage('cannot be instantiated without invoking its constructor');
        }
        $storage = (new \ReflectionClass(Shmetrics::class))->newInstanceWithoutConstructor();
        $calls = [
            'render' => fn () => $storage->render(),
            'stats' => fn () => $storage->stats(),
            'wipeStorage' => fn () => $storage->wipeStorage(),
            'Snapshot::take' => fn () => Snapshot::take($storage),
        ];
        foreach ($calls as $what => $call) {
            try {
                $call();
                self::fail("$what worked");
            } catch (\TypeError $e) {
                // The extension's Snapshot: its $store is null.
                self::assertStringContainsString('Shmetrics\Ext\Store', $e->getMessage(), $what);
            } catch (\Error $e) {
                self::assertSame(\Error::class, get_class($e), $what);
                self::assertStringContainsString('was not constructed', $e->getMessage(), $what);
            }
        }
    }
}
