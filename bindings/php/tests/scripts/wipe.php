<?php

// Wipes the store at argv[1] from a process of its own.

declare(strict_types=1);

require dirname(__DIR__, 2) . '/autoload.php';

(new Shmetrics\Storage\Shmetrics($argv[1], ['create' => false]))->wipeStorage();
