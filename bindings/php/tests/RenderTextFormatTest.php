<?php

declare(strict_types=1);

namespace Shmetrics\Tests;

use Shmetrics\Exception\InvalidArgumentException;
use Shmetrics\Exposition;
use Shmetrics\RenderTextFormat;
use Shmetrics\Storage\Shmetrics;
use Shmetrics\Tests\Support\TestCase;

final class RenderTextFormatTest extends TestCase
{
    private function fill(): \Shmetrics\CollectorRegistry
    {
        $reg = $this->registry();
        $reg->registerCounter('app', 'requests', "Requests \\ served\nby route.", ['route'])->inc(['/"x"']);
        $reg->registerGauge('app', 'inflight', 'In flight.')->set(2);
        $reg->registerHistogram('app', 'seconds', 'Latency.', ['route'], [0.1, 1])->observe(0.5, ['/']);
        $reg->registerSummary('app', 'bytes', 'Sizes.')->observe(10);
        return $reg;
    }

    public function testPromphpsRenderCallRendersTheStore(): void
    {
        $reg = $this->fill();
        $text = (new RenderTextFormat())->render($reg->getMetricFamilySamples());
        self::assertSame(self::dump($this->dir . '/store'), $text);
        self::assertSame($text, $reg->getStorage()->render());
        self::assertStringContainsString("# HELP app_requests_total Requests \\\\ served\\nby route.\n", $text);
        self::assertStringContainsString("app_requests_total{route=\"/\\\"x\\\"\"} 1\n", $text);
        self::assertPromtoolAccepts($text);
        self::assertSame('text/plain; version=0.0.4', RenderTextFormat::MIME_TYPE);
        self::assertStringStartsWith(RenderTextFormat::MIME_TYPE, $reg->getStorage()->contentType());
        self::assertSame($text, (string) $reg->getMetricFamilySamples()[0]);
    }

    public function testOpenMetrics(): void
    {
        $storage = $this->fill()->getStorage();
        $om = $storage->render(Shmetrics::FORMAT_OPENMETRICS);
        self::assertStringEndsWith("# EOF\n", $om);
        self::assertSame(self::dump($this->dir . '/store', 'openmetrics'), $om);
        self::assertStringStartsWith('application/openmetrics-text', $storage->contentType(Shmetrics::FORMAT_OPENMETRICS));
        try {
            $storage->render(7);
            self::fail('format 7 was accepted');
        } catch (InvalidArgumentException $e) {
            self::assertSame(\Shmetrics\Native::INVALID_ARGUMENT, $e->getCode());
        }
        $this->expectException(InvalidArgumentException::class);
        $storage->contentType(7);
    }

    public function testRenderRefusesWhatItCannotRender(): void
    {
        $r = new RenderTextFormat();
        self::assertSame('a 1\n', $r->render([new Exposition('a 1\n')]));
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('got stdClass');
        $r->render([new \stdClass()]);
    }
}
