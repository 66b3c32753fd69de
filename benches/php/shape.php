<?php

// The endpoint shape of issue 17 that benches/php/fpm-app.php serves and
// benches/php/instructions.php counts: a fresh registry, 4 getOrRegister
// and 5 updates, on one engine: native (Shmetrics\), adapter (PromPHP on
// ShmetricsAdapter), apcng (PromPHP on APCng), redis (PromPHP on its Redis
// adapter, at 127.0.0.1:$REDIS_PORT), noop (BenchNoopRegistry: a userland
// API of the same shape whose updates do nothing, the floor of what any PHP
// metrics API called this way costs a request), store (only
// `new Shmetrics\Storage\Shmetrics()`: the store handle and its per-request
// check that the path still names the mapped file, no metrics).

declare(strict_types=1);

/** A fresh registry of $engine; null for "none" and "store" (which builds only the storage). */
function bench_registry(string $engine): ?object
{
    return match ($engine) {
        'store' => (static function (): null {
            new Shmetrics\Storage\Shmetrics();
            return null;
        })(),
        'native' => new Shmetrics\CollectorRegistry(new Shmetrics\Storage\Shmetrics(), false),
        'adapter' => new Prometheus\CollectorRegistry(new Shmetrics\PromPHP\ShmetricsAdapter(), false),
        'apcng' => new Prometheus\CollectorRegistry(new Prometheus\Storage\APCng(), false),
        'noop' => new BenchNoopRegistry(),
        'redis' => new Prometheus\CollectorRegistry(
            new Prometheus\Storage\Redis(['host' => '127.0.0.1', 'port' => (int) getenv('REDIS_PORT')]),
            false
        ),
        default => null,
    };
}

/** 4 getOrRegister and 5 updates on $registry. */
function bench_endpoint(object $registry): void
{
    $route = '/users';
    $inflight = $registry->getOrRegisterGauge('app', 'inflight', 'Requests in progress.');
    $requests = $registry->getOrRegisterCounter('app', 'requests', 'Requests served.', ['route', 'status']);
    $seconds = $registry->getOrRegisterHistogram('app', 'request_seconds', 'Request latency.', ['route']);
    $bytes = $registry->getOrRegisterCounter('app', 'response_bytes', 'Bytes sent.', ['route']);
    $inflight->inc();
    $requests->inc([$route, '200']);
    $seconds->observe(0.042, [$route]);
    $bytes->incBy(1234, [$route]);
    $inflight->dec();
}

/**
 * The floor: a registry of the same shape as the others, in PHP, that
 * records nothing. getOrRegister* find or make one object per name and its
 * updates have empty bodies, so a request on it pays only for what any PHP
 * metrics API called this way pays: the calls, their arguments, the
 * objects and arrays.
 */
final class BenchNoopRegistry
{
    /** @var array<string, BenchNoopMetric> */
    private array $m = [];

    /** @param list<string> $labels */
    public function getOrRegisterCounter(string $ns, string $name, string $help, array $labels = []): BenchNoopMetric
    {
        return $this->m["$ns:$name"] ??= new BenchNoopMetric($ns, $name, $help, $labels);
    }

    /** @param list<string> $labels */
    public function getOrRegisterGauge(string $ns, string $name, string $help, array $labels = []): BenchNoopMetric
    {
        return $this->m["$ns:$name"] ??= new BenchNoopMetric($ns, $name, $help, $labels);
    }

    /** @param list<string> $labels @param list<float>|null $buckets */
    public function getOrRegisterHistogram(string $ns, string $name, string $help, array $labels = [],
        ?array $buckets = null): BenchNoopMetric
    {
        return $this->m["$ns:$name"] ??= new BenchNoopMetric($ns, $name, $help, $labels);
    }
}

/** A metric of BenchNoopRegistry: its updates do nothing. */
final class BenchNoopMetric
{
    /** @param list<string> $labels */
    public function __construct(
        public readonly string $namespace,
        public readonly string $name,
        public readonly string $help,
        public readonly array $labels,
    ) {
    }

    /** @param list<string> $labels */
    public function inc(array $labels = []): void
    {
    }

    /** @param list<string> $labels */
    public function incBy(int|float $value, array $labels = []): void
    {
    }

    /** @param list<string> $labels */
    public function dec(array $labels = []): void
    {
    }

    /** @param list<string> $labels */
    public function observe(float $value, array $labels = []): void
    {
    }
}
