<?php

// A PSR-4 autoloader for Shmetrics\ -> src/, for use without Composer
// (Composer's own autoloader does the same from composer.json).

declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    if (strncmp($class, 'Shmetrics\\', 10) !== 0) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, 10)) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
