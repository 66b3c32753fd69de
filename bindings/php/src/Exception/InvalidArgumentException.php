<?php

declare(strict_types=1);

namespace Shmetrics\Exception;

/**
 * A bad argument: an invalid metric or label name, the wrong number of
 * label values, NaN, a negative counter increment, buckets or quantiles
 * out of order, a string that is not UTF-8. It extends PHP's
 * \InvalidArgumentException, which is what PromPHP throws for these.
 */
class InvalidArgumentException extends \InvalidArgumentException implements ShmetricsException
{
}
