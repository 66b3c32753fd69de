<?php

declare(strict_types=1);

namespace Shmetrics\Exception;

/** get*() found no metric of that name in this registry. */
class MetricNotFoundException extends \Exception implements ShmetricsException
{
}
