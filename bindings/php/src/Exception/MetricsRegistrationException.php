<?php

declare(strict_types=1);

namespace Shmetrics\Exception;

/**
 * A metric cannot be registered: this registry already has it
 * (register*), or the store holds a metric of that name with another
 * type, labels, buckets or mode (registered by any process).
 */
class MetricsRegistrationException extends \Exception implements ShmetricsException
{
}
