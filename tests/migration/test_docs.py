"""docs/migrating.md's Ruby switches, run as written against the gem
installed outside the checkout (scripts/migration-tests.sh installs it,
with GEM_HOME and GEM_PATH set): each block marked
`<!-- migration-test: ruby -->`, its store path pointed at a temporary
directory, then a line that checks what the block says it does.
(The Python and Lua switches run in the packaging test, against the
installed wheel and rock.)"""

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
