<?php

// The opcache.preload script for php-fpm: compiles and links every class
// of the package once, in the master, for all workers. With
// ffi.enable=preload, PHP allows FFI calls only from preloaded code, so
// this is what lets the workers call the library; the FFI declarations
// themselves come from ffi.preload (see docs/php.md). Works with
// opcache.preload_user. The PromPHP adapter (src/PromPHP) is preloaded only
// when PromPHP's Prometheus\Storage\Adapter can be loaded (an autoloader
// that finds it must be registered before this script, e.g. Composer's).

declare(strict_types=1);

require __DIR__ . '/autoload.php';

$src = __DIR__ . '/src';
$files = new RecursiveIteratorIterator(new RecursiveDirectoryIterator($src, FilesystemIterator::SKIP_DOTS));
foreach ($files as $file) {
    if ($file->getExtension() === 'php') {
        $class = 'Shmetrics\\' . str_replace('/', '\\', substr($file->getPathname(), strlen($src) + 1, -4));
        if (str_starts_with($class, 'Shmetrics\\PromPHP\\') && !interface_exists('Prometheus\\Storage\\Adapter')) {
            continue;
        }
        class_exists($class) || interface_exists($class);
    }
}
