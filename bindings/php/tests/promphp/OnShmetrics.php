<?php

declare(strict_types=1);

namespace Shmetrics\Tests\PromPHP;

use Shmetrics\PromPHP\ShmetricsAdapter;

/**
 * PromPHP's configureAdapter() for its abstract tests: a ShmetricsAdapter
 * on the store the bootstrap made, wiped, as PromPHP's own APCng tests do.
 */
trait OnShmetrics
{
    public function configureAdapter(): void
    {
        $this->adapter = new ShmetricsAdapter(PROMPHP_TEST_STORE);
        $this->adapter->wipeStorage();
    }
}
