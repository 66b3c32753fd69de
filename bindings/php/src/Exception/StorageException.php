<?php

declare(strict_types=1);

namespace Shmetrics\Exception;

/**
 * The store cannot be used: PHP's FFI is off or the library cannot be
 * loaded, the store file is missing, foreign, cut short, corrupt or of
 * another layout version (the message names the file, which is never
 * changed), the store is full or read-only. getCode() tells which
 * (Shmetrics\Native::IO, ::FOREIGN_FILE, ::STORE_FULL, ...).
 */
class StorageException extends \Exception implements ShmetricsException
{
}
