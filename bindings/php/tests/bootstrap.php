<?php

// PHPUnit bootstrap: the package's PSR-4 autoloader, and one for the test
// helpers (Shmetrics\Tests\ -> tests/). scripts/php-tests.sh sets
// SHMETRICS_LIBRARY and SHMETRICS_BIN.

declare(strict_types=1);

require dirname(__DIR__) . '/autoload.php';

spl_autoload_register(static function (string $class): void {
    if (strncmp($class, 'Shmetrics\\Tests\\', 16) === 0) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, 16)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
