<?php

// PHPUnit bootstrap: the package's PSR-4 autoloader, and one for the test
// helpers (Shmetrics\Tests\ -> tests/). scripts/php-tests.sh sets
// SHMETRICS_LIBRARY and SHMETRICS_BIN.

declare(strict_types=1);

// Under scripts/php-sanitizers.sh: the processes the tests start (php,
// php-fpm, the CLI, python3...) inherit the preloaded ASan runtime, with
// these options (no leak report at their exit; invalid accesses still
// abort them); only this process's exit reports leaks.
$childAsan = getenv('SHMETRICS_CHILD_ASAN_OPTIONS');
if (is_string($childAsan) && $childAsan !== '') {
    putenv("ASAN_OPTIONS=$childAsan");
}

require dirname(__DIR__) . '/autoload.php';

spl_autoload_register(static function (string $class): void {
    if (strncmp($class, 'Shmetrics\\Tests\\', 16) === 0) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, 16)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
