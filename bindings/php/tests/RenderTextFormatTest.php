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
        $reg->registerCounter('app', 'requests_total', "Requests \\ served\nby route.", ['route'])->inc(['/"x"']);
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

    /**
     * Every format names a counter as PromPHP serves it and writes bounds
     * and quantiles as PHP writes floats (the family's exposition hints,
     * docs/ARCHITECTURE.md): `jobs` stays `jobs` in the text format,
     * `requests_total` stays `requests_total`; OpenMetrics, which wants
     * `_total` on every counter sample, names the first `jobs_total`.
     */
    public function testPagesSpellNamesAndBoundsAsPromphp(): void
    {
        $reg = $this->registry();
        $reg->registerCounter('ns', 'jobs', 'Jobs.')->inc();
        $reg->registerCounter('ns', 'requests_total', 'Requests.')->inc();
        $reg->registerHistogram('ns', 'size', 'Sizes.', [], [0.25, 1, 2.5, 1000])->observe(3);
        $reg->registerSummary('ns', 'lat', 'Latency.', [], 600, [0, 0.5, 1])->observe(2);
        $text = $reg->getStorage()->render();
        foreach ([
            "# TYPE ns_jobs counter\nns_jobs 1\n",
            "# TYPE ns_requests_total counter\nns_requests_total 1\n",
            "ns_size_bucket{le=\"0.25\"} 0\nns_size_bucket{le=\"1\"} 0\nns_size_bucket{le=\"2.5\"} 0\n"
                . "ns_size_bucket{le=\"1000\"} 1\nns_size_bucket{le=\"+Inf\"} 1\n",
            "ns_lat{quantile=\"0\"} 2\nns_lat{quantile=\"0.5\"} 2\nns_lat{quantile=\"1\"} 2\n",
        ] as $want) {
            self::assertStringContainsString($want, $text);
        }
        self::assertSame($text, (new RenderTextFormat())->render($reg->getMetricFamilySamples()));
        $om = $reg->getStorage()->render(Shmetrics::FORMAT_OPENMETRICS);
        self::assertStringContainsString("# TYPE ns_jobs counter\n# HELP ns_jobs Jobs.\nns_jobs_total 1\n", $om);
        self::assertStringContainsString("# TYPE ns_requests counter\n# HELP ns_requests Requests.\nns_requests_total 1\n", $om);
        self::assertStringContainsString("ns_size_bucket{le=\"1\"} 0\n", $om);
        self::assertStringNotContainsString('_created', $om);
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
