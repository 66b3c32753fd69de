<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Counter;
use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Native;
use Shmetrics\Tests\Support\TestCase;

final class CounterTest extends TestCase
{
    public function testIncAndIncByAreSeenByAnotherProcess(): void
    {
        $reg = $this->registry();
        $c = $reg->registerCounter('app', 'requests', 'Requests served.', ['route', 'status']);
        self::assertInstanceOf(Counter::class, $c);
        for ($i = 0; $i < 1000; $i++) {
            $c->inc(['/', '200']);
        }
        $c->incBy(5, ['/', '200']);
        $c->incBy(0.25, ['/users', 404]);
        $c->inc(['/users', '404']);
        $s = $this->dumped($reg->getStorage()->path());
        self::assertSame(1005.0, $s['app_requests{route="/",status="200"}']);
        self::assertSame(1.25, $s['app_requests{route="/users",status="404"}']);
    }

    public function testTinyIncrementsAreNotRoundedAway(): void
    {
        // APCng keeps fixed-point values: increments below its resolution vanish.
        $c = $this->registry()->registerCounter('', 'tiny', 'Tiny increments.');
        for ($i = 0; $i < 4; $i++) {
            $c->incBy(1e-9);
        }
        $v = $this->dumped($this->dir . '/store')['tiny'];
        self::assertEqualsWithDelta(4e-9, $v, 1e-20);
    }

    public function testNameAndAccessorsFollowPromphp(): void
    {
        $c = $this->registry()->registerCounter('ns', 'jobs_total', 'Jobs run.', ['queue']);
        self::assertSame('ns_jobs_total', $c->getName());
        self::assertSame('Jobs run.', $c->getHelp());
        self::assertSame(['queue'], $c->getLabelNames());
        self::assertSame('counter', $c->getType());
        self::assertSame(sha1('ns_jobs_total' . serialize(['queue'])), $c->getKey());
        $c->inc(['q']);
        // A trailing _total is not doubled.
        self::assertArrayHasKey('ns_jobs_total{queue="q"}', $this->dumped($this->dir . '/store'));
    }

    public function testNegativeAndNanIncrementsAreRefused(): void
    {
        $c = $this->registry()->registerCounter('', 'c', 'C.');
        foreach ([-1, -0.5, NAN] as $bad) {
            try {
                $c->incBy($bad);
                self::fail("incBy($bad) was accepted");
            } catch (InvalidArgumentException $e) {
                self::assertSame(Native::INVALID_VALUE, $e->getCode());
                self::assertStringContainsString('counter c', $e->getMessage());
            }
        }
        $c->inc();
        self::assertSame(1.0, $this->dumped($this->dir . '/store')['c']);
    }

    public function testWrongLabelCountsAreRefusedEvenWhenCached(): void
    {
        $one = $this->registry()->registerCounter('', 'one', 'One label.', ['l']);
        $one->inc(['']);  // cached under the same key an empty array would have
        foreach ([[], ['a', 'b']] as $labels) {
            try {
                $one->inc($labels);
                self::fail('accepted ' . json_encode($labels));
            } catch (InvalidArgumentException $e) {
                self::assertStringContainsString('takes 1 label value (l), got ' . count($labels), $e->getMessage());
            }
        }
        $this->expectException(InvalidArgumentException::class);
        $one->incBy(1, []);
    }

    public function testLabelValuesMustBeUtf8Scalars(): void
    {
        $c = $this->registry()->registerCounter('', 'c', 'C.', ['l']);
        try {
            $c->inc(["\xff"]);
            self::fail('accepted invalid UTF-8');
        } catch (InvalidArgumentException $e) {
            self::assertSame(Native::INVALID_UTF8, $e->getCode());
        }
        try {
            @$c->inc([['nested']]);  // implode() warns "Array to string conversion" first
            self::fail('accepted an array label value');
        } catch (InvalidArgumentException $e) {
            self::assertStringContainsString('label values must be strings or numbers, got array', $e->getMessage());
        }
        $c->inc([1.5]);
        $c->inc(['1.5']);
        $c->inc(["quote\" back\\slash\nnewline ü"]);
        $s = $this->dumped($this->dir . '/store');
        self::assertSame(2.0, $s['c{l="1.5"}']);
        self::assertSame(1.0, $s['c{l="quote\" back\\\\slash\nnewline ü"}']);
    }
}
