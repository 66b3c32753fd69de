<?php

// opcache.preload for benches/php/fpm.php: the package's classes, with
// ShmetricsAdapter (PromPHP's autoloader is registered first, as
// docs/php.md says to do with Composer's), the endpoint's shape.php (with the no-op engine's classes), and
// the PromPHP classes the endpoint uses, so that no engine pays for
// loading classes per request.

declare(strict_types=1);

require __DIR__ . '/promphp.php';
promphp_autoload();
require dirname(__DIR__, 2) . '/bindings/php/preload.php';
require __DIR__ . '/shape.php';

foreach ([
    'CollectorRegistry', 'Counter', 'Gauge', 'Histogram', 'Summary', 'RenderTextFormat', 'MetricFamilySamples',
    'Sample', 'Math', 'Storage\APCng', 'Exception\MetricNotFoundException', 'Exception\MetricsRegistrationException',
    'Exception\StorageException', 'Storage\AbstractRedis', 'Storage\Redis', 'Storage\RedisClients\RedisClient',
    'Storage\RedisClients\PHPRedis', 'Storage\RedisClients\RedisClientException',
] as $class) {
    class_exists("Prometheus\\$class");
}
