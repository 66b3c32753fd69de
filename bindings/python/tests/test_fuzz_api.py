"""The API fuzzer (fuzz_api.py) in ./run-tests: the seeds that ever failed,
then fresh ones; each seed is a process of its own, so a crash, a hang or
an undocumented exception of any call fails this test with the seed to
replay (``python fuzz_api.py --child SEED CALLS DIR``)."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_random_calls_give_results_or_documented_errors():
    runs = os.environ.get("SHMETRICS_FUZZ_RUNS", "34")
    p = subprocess.run([sys.executable, os.path.join(HERE, "fuzz_api.py"), "--runs", runs,
                        "--calls", "3000", "--seed", "1000"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-3000:]
    assert " 0 failed" in p.stdout, p.stdout
