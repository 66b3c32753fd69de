<?php

// PromPHP (promphp/prometheus_client_php) for the PHP benchmarks, which
// compare it with shmetrics: from $PROMPHP_DIR, else the pinned copy in
// ../shared/peers/promphp-v2.15.1 next to the repository (or to the folder
// of its worktrees). Packagist is not reachable here, so not Composer.

declare(strict_types=1);

/** Registers an autoloader for Prometheus\ and returns PromPHP's folder; null if there is none. */
function promphp_autoload(): ?string
{
    $repo = dirname(__DIR__, 2);
    $candidates = [getenv('PROMPHP_DIR') ?: '', "$repo/../shared/peers/promphp-v2.15.1",
        "$repo/../../shared/peers/promphp-v2.15.1"];
    foreach ($candidates as $dir) {
        if ($dir === '' || !is_file("$dir/src/Prometheus/Storage/Adapter.php")) {
            continue;
        }
        $src = realpath("$dir/src/Prometheus");
        spl_autoload_register(static function (string $class) use ($src): void {
            if (str_starts_with($class, 'Prometheus\\')) {
                $file = $src . '/' . str_replace('\\', '/', substr($class, 11)) . '.php';
                is_file($file) && require $file;
            }
        });
        return dirname($src, 2);
    }
    return null;
}
