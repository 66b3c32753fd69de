<?php

// The application FpmLibraryTest serves: opens the store ($_GET['store']),
// which loads the library if this worker has not, and answers with what
// happened ("loaded VERSION", or "refused: CLASS: MESSAGE"), then every
// libshmetrics file this worker has mapped (/proc/self/maps), one
// "mapped: PATH" line each, and "pid: PID".

declare(strict_types=1);

require dirname(__DIR__, 2) . '/autoload.php';

header('Content-Type: text/plain');
try {
    new Shmetrics\Storage\Shmetrics((string) ($_GET['store'] ?? ''));
    echo 'loaded ', Shmetrics\Ext\version(), "\n";
} catch (Shmetrics\Exception\ShmetricsException $e) {
    echo 'refused: ', get_class($e), ': ', $e->getMessage(), "\n";
}
$mapped = [];
foreach (file('/proc/self/maps', FILE_IGNORE_NEW_LINES) as $line) {
    $fields = preg_split('/\s+/', $line, 6);
    if (isset($fields[5]) && str_contains($fields[5], 'libshmetrics')) {
        $mapped[$fields[5]] = true;
    }
}
foreach (array_keys($mapped) as $path) {
    echo "mapped: $path\n";
}
echo 'pid: ', getmypid(), "\n";
