<?php

// opcache.preload for ApacheTest's preloaded setup: PromPHP's autoloader
// first (PROMPHP_DIR, from Apache's environment), so that bindings/php's
// preload.php preloads ShmetricsAdapter too, as docs/php.md says to do
// with Composer's autoloader.

declare(strict_types=1);

$promphp = getenv('PROMPHP_DIR') . '/src/Prometheus/';
spl_autoload_register(static function (string $class) use ($promphp): void {
    if (str_starts_with($class, 'Prometheus\\')) {
        require $promphp . str_replace('\\', '/', substr($class, 11)) . '.php';
    }
});
require dirname(__DIR__, 2) . '/preload.php';
