<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Tests\Support\TestCase;

/**
 * A process that forks after opening the store: each child gets its own
 * writer slot (the library's pthread_atfork handler), so no update is lost
 * and per-process gauges tell the children apart.
 *
 * @requires extension pcntl
 */
final class ForkTest extends TestCase
{
    public function testForkedChildrenGetSlotsOfTheirOwn(): void
    {
        $path = $this->dir . '/fork';
        $out = self::command([PHP_BINARY, __DIR__ . '/scripts/fork.php', $path, '4', '2500']);
        $children = json_decode($out, true);
        self::assertCount(4, $children);
        $s = $this->dumped($path);
        self::assertSame(1.0 + 4 * 2500, $s['forked']);
        self::assertSame(4.0 * 2500, $s['forked_seconds_count']);
        // Gauge mode "all": one series per process that wrote it.
        foreach ($children as $pid) {
            self::assertSame((float) $pid, $s["forked_pid{pid=\"$pid\"}"]);
        }
    }
}
