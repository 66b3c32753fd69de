<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Gauge;
use Shmetrics\Native;
use Shmetrics\Tests\Support\TestCase;

final class GaugeTest extends TestCase
{
    public function testEveryUpdate(): void
    {
        $g = $this->registry()->registerGauge('app', 'level', 'A level.', ['tank']);
        self::assertSame('shared', $g->getMode());
        $g->set(10, ['a']);
        $g->inc(['a']);
        $g->incBy(2.5, ['a']);
        $g->dec(['a']);
        $g->decBy(0.5, ['a']);
        $g->set(-3, ['b']);
        $before = time();
        $g->setToCurrentTime(['t']);
        $s = $this->dumped($this->dir . '/store');
        self::assertSame(12.0, $s['app_level{tank="a"}']);
        self::assertSame(-3.0, $s['app_level{tank="b"}']);
        self::assertGreaterThanOrEqual($before, $s['app_level{tank="t"}']);
        self::assertLessThanOrEqual(time() + 1, $s['app_level{tank="t"}']);
    }

    public function testNanIsRefused(): void
    {
        $g = $this->registry()->registerGauge('', 'g', 'G.');
        foreach (['set', 'incBy', 'decBy'] as $method) {
            try {
                $g->{$method}(NAN);
                self::fail("$method(NAN) was accepted");
            } catch (InvalidArgumentException $e) {
                self::assertSame(Native::INVALID_VALUE, $e->getCode());
            }
        }
    }

    public function testModes(): void
    {
        $reg = $this->registry();
        $all = $reg->registerGauge('', 'per_process', 'One series per process.', [], 'all');
        $all->set(7);
        $sum = $reg->registerGauge('', 'summed', 'Live sum.', [], 'livesum');
        $sum->incBy(3);
        $s = $this->dumped($this->dir . '/store');
        self::assertSame(7.0, $s['per_process{pid="' . getmypid() . '"}']);
        self::assertSame(3.0, $s['summed']);
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('unknown gauge mode "newest"; the modes are all, liveall');
        $reg->registerGauge('', 'bad', 'Bad mode.', [], 'newest');
    }

    public function testModeNumbersMatchTheHeader(): void
    {
        $cdef = file_get_contents(Native::cdefPath());
        preg_match_all('/SHMETRICS_GAUGE_([A-Z]+) = (\d+)/', $cdef, $m, PREG_SET_ORDER);
        $header = [];
        foreach ($m as [, $name, $value]) {
            if ($name !== 'DEFAULT') {
                $header[strtolower($name)] = (int) $value;
            }
        }
        self::assertSame($header, Gauge::MODES);
    }
}
