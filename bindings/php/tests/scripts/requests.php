<?php

// Plays php-fpm's request cycle in one process without the server: each
// "request" makes a new FFI::cdef instance, opens the store and counts,
// then drops every PHP object, which makes PHP dlclose the library (as at
// the end of a request). Prints what the C side kept between requests.
// Usage: php requests.php STORE REQUESTS

declare(strict_types=1);

require dirname(__DIR__, 2) . '/autoload.php';

use Shmetrics\Native;

[, $path, $requests] = $argv;
$addresses = [];
for ($i = 0; $i < (int) $requests; $i++) {
    $ffi = FFI::cdef(file_get_contents(Native::cdefPath()), Native::library());
    $out = $ffi->new('shmetrics_store *');
    $rc = $ffi->shmetrics_store_open_persistent($path, strlen($path), null, FFI::addr($out));
    if ($rc !== 0) {
        fwrite(STDERR, "open failed: $rc\n");
        exit(1);
    }
    $addresses[] = $ffi->cast('uintptr_t', $out)->cdata;
    $d = $ffi->new('shmetrics_family_desc');
    [$d->name, $keep] = Native::str($ffi, 'requests_total');
    $d->kind = 1;
    $fam = $ffi->new('shmetrics_family');
    $ffi->shmetrics_register($out, FFI::addr($d), FFI::addr($fam));
    $s = $ffi->new('shmetrics_series');
    $ffi->shmetrics_series_get($out, FFI::addr($fam), null, 0, FFI::addr($s));
    $ffi->shmetrics_counter_inc($out, FFI::addr($s));
    unset($ffi, $out, $d, $keep, $fam, $s);
}
$stats = [];
$lib = basename(Native::library());
echo json_encode([
    'distinct_handles' => count(array_unique($addresses)),
    'library_mapped' => str_contains(file_get_contents('/proc/self/maps'), $lib),
]), "\n";
