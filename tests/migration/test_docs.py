"""docs/migrating.md's Ruby and PHP switches, run as written: the Ruby
ones against the gem installed outside the checkout
(scripts/migration-tests.sh installs it, with GEM_HOME and GEM_PATH set),
the PromPHP one with PromPHP's sources (PROMPHP_DIR) and the binding's
autoloader (SHMETRICS_LIBRARY, as the other PromPHP tests). Each block
marked `<!-- migration-test: LANG -->` runs with its store path pointed
at a temporary directory, then a line that checks what the block says it
does. (The Python, Lua and Node switches run in the packaging test,
against the installed wheel, rock and npm package.)"""

import os
import re
import subprocess

import harness as h

# What each block must leave behind, by the require it starts with.
CHECKS = {
    "shmetrics/data_store": 'raise "no DataStore" unless Prometheus::Client.config.data_store.is_a?(Shmetrics::DataStore)\n'
    'c = Prometheus::Client::Counter.new(:doc_jobs_total, docstring: "Jobs.")\n'
    'c.increment\n'
    'raise "not counted" unless c.get == 1.0\n',
    "shmetrics/statsd/compat": 'raise "no ::StatsD" unless defined?(::StatsD)\n'
    'StatsD.increment("doc.jobs")\n',
}


def ruby_blocks() -> list[str]:
    text = h.MIGRATING_MD.read_text()
    return re.findall(r"<!-- migration-test: ruby -->\n```ruby\n(.*?)```", text, re.S)


def test_the_ruby_switches_run_as_written(tmp_path):
    blocks = ruby_blocks()
    assert len(blocks) == 2, blocks
    client_ruby = h.env("CLIENT_RUBY_DIR") + "/lib"
    for i, block in enumerate(blocks):
        store = tmp_path / f"app{i}.shm"
        first = re.search(r'require "([^"]+)"', block).group(1)
        code = block.replace("/dev/shm/app.shm", str(store)) + CHECKS[first]
        env = {**os.environ, "SHMETRICS_STATSD_STORE": str(store)}
        r = subprocess.run(["ruby", "-I", client_ruby, "-e", 'require "prometheus/client"', "-e", code],
                           env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert r.returncode == 0, f"{first}: {r.stderr[-2000:]}"
        assert store.exists(), f"{first}: no store at {store}"


# What the PromPHP block must leave behind: a registry on the store, whose
# counter PromPHP's own API reads back.
PHP_CHECK = """
$c = $registry->getOrRegisterCounter('doc', 'jobs_total', 'Jobs.', ['queue']);
$c->inc(['mail']);
$c->incBy(2, ['mail']);
foreach ($registry->getMetricFamilySamples() as $family) {
    foreach ($family->getSamples() as $sample) {
        if ($sample->getName() === 'doc_jobs_total' && $sample->getValue() == 3) {
            exit(0);
        }
    }
}
fwrite(STDERR, "not counted\n");
exit(1);
"""

PHP_PRELUDE = """<?php
require getenv('SHMETRICS_PHP_DIR') . '/autoload.php';
spl_autoload_register(static function (string $class): void {
    $file = getenv('PROMPHP_DIR') . '/src/' . str_replace('\\\\', '/', $class) . '.php';
    if (str_starts_with($class, 'Prometheus\\\\') && is_file($file)) {
        require $file;
    }
});
"""


def test_the_promphp_switch_runs_as_written(tmp_path):
    blocks = re.findall(r"<!-- migration-test: php -->\n```php\n(.*?)```", h.MIGRATING_MD.read_text(), re.S)
    assert len(blocks) == 1, blocks
    store = tmp_path / "myapp.metrics"
    uses = "".join(line + "\n" for line in blocks[0].splitlines() if line.startswith("use "))
    body = "".join(line + "\n" for line in blocks[0].splitlines() if not line.startswith("use "))
    script = tmp_path / "switch.php"
    # `use` lines go first in a PHP file, before the prelude's statements.
    script.write_text(PHP_PRELUDE.replace("<?php\n", "<?php\n" + uses) + body.replace("/dev/shm/myapp.metrics", str(store)) + PHP_CHECK)
    env = {**os.environ, "SHMETRICS_PHP_DIR": str(h.REPO / "bindings" / "php"), "PROMPHP_DIR": h.env("PROMPHP_DIR")}
    r = subprocess.run(["php", "-d", "ffi.enable=true", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert store.exists(), f"no store at {store}"
