<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Native;
use Shmetrics\Summary;
use Shmetrics\Tests\Support\TestCase;

final class SummaryTest extends TestCase
{
    public function testObserveKeepsCountAndSum(): void
    {
        $sm = $this->registry()->registerSummary('app', 'size_bytes', 'Sizes.', ['kind'], 600, [0.5, 0.9]);
        self::assertSame('summary', $sm->getType());
        for ($i = 1; $i <= 100; $i++) {
            $sm->observe($i, ['a']);
        }
        $s = $this->dumped($this->dir . '/store');
        self::assertSame(100.0, $s['app_size_bytes_count{kind="a"}']);
        self::assertSame(5050.0, $s['app_size_bytes_sum{kind="a"}']);
        // Quantiles over the window, within the sketch's 0.99% (100
        // observations, past the 16 a period keeps exactly): nearest
        // ranks ceil(q * 100) of 1..100.
        self::assertEqualsWithDelta(50.0, $s['app_size_bytes{kind="a",quantile="0.5"}'], 50 * 0.0099);
        self::assertEqualsWithDelta(90.0, $s['app_size_bytes{kind="a",quantile="0.9"}'], 90 * 0.0099);
        self::assertSame([0.01, 0.05, 0.5, 0.95, 0.99], Summary::getDefaultQuantiles());
    }

    public function testBadDefinitionsAndValuesAreRefused(): void
    {
        $reg = $this->registry();
        $bad = [
            'quantile out of range' => fn () => $reg->registerSummary('', 's1', 'S.', [], 600, [0.5, 1.5]),
            'quantiles out of order' => fn () => $reg->registerSummary('', 's2', 'S.', [], 600, [0.9, 0.5]),
            'a quantile label' => fn () => $reg->registerSummary('', 's3', 'S.', ['quantile']),
            'a window of 0' => fn () => $reg->registerSummary('', 's4', 'S.', [], 0),
            'NaN' => fn () => $reg->registerSummary('', 's5', 'S.')->observe(NAN),
        ];
        foreach ($bad as $what => $call) {
            try {
                $call();
                self::fail("$what was accepted");
            } catch (InvalidArgumentException $e) {
                self::assertNotSame('', $e->getMessage());
            }
        }
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionCode(Native::INVALID_VALUE);
        $reg->getSummary('', 's5')->observe(NAN);
    }
}
