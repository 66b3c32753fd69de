<?php

// The endpoint benches/php/fpm.php serves through nginx and php-fpm: per
// request, a fresh registry, 4 getOrRegister and 5 updates (shape.php,
// preloaded), on the engine the path names: /native (Shmetrics\), /adapter
// (PromPHP on ShmetricsAdapter), /apcng (PromPHP on APCng), /redis (PromPHP
// on its Redis adapter, a local redis-server), /noop (a userland API of the
// same shape that records nothing: the floor), /store (only the storage
// object: the store handle and its replaced-store check), /none (no
// metrics), also under /ext/ (the php-fpm with the shmetrics extension). Answers
// with the nanoseconds the metrics took.

declare(strict_types=1);

// /ext/native: native, on the extension's php-fpm (or Apache: benches/php/apache.php, which has no DOCUMENT_URI)
$engine = basename($_SERVER['DOCUMENT_URI'] ?? (parse_url($_SERVER['REQUEST_URI'] ?? '/none', PHP_URL_PATH) ?: '/none'));
$start = hrtime(true);
$registry = bench_registry($engine);
if ($registry !== null) {
    bench_endpoint($registry);
}
echo hrtime(true) - $start;
