<?php

declare(strict_types=1);

namespace Shmetrics\Exception;

/**
 * Implemented by every exception this package throws. getCode() is the C
 * ABI's result code (a Shmetrics\Native::* constant, e.g.
 * Native::INVALID_VALUE), or 0 for an error found in PHP.
 */
interface ShmetricsException extends \Throwable
{
}
