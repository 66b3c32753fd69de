"""Prints, per pair and check, how many differences docs/migrating.md does
not list (from the files harness.assert_no_unchosen writes under
$MIGRATION_DIFFS_DIR), grouped by kind and by what they look like: a
summary for a failing run. scripts/migration-tests.sh runs it after the
tests.

    python tests/migration/summary.py [DIR]
"""

import os
import re
import sys
from collections import Counter
from pathlib import Path


def shape(line: str) -> str:
    """`[check] kind series detail` with the series reduced to its name
    and the kind of rename it shows (`le` written as a float, `_total`,
    `_created`, `pid`, the exporter's own `shmetrics_*`)."""
    kind, series = line.split(" ")[1:3]
    name = re.split(r"[{ ]", series, maxsplit=1)[0]
    tags = []
    if re.search(r'le="[0-9]+\.0"', series):
        tags.append('le="N.0"')
    elif re.search(r'le="[0-9]+"', series):
        tags.append('le="N"')
    if 'pid="' in series:
        tags.append("pid")
    if name.startswith("shmetrics_"):
        name = "shmetrics_* (the exporter's own)"
    elif name.endswith("_created"):
        name = "*_created"
    return f"{kind:18} {name} {' '.join(tags)}".rstrip()


def unused_rows(d: Path) -> None:
    """The rows of docs/migrating.md's table that covered no difference in
    this run (after a run of every test, a row to reconsider)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness

    used_file = d / "used-rows.log"
    used = {int(x) for x in used_file.read_text().split()} if used_file.exists() else set()
    for i, a in enumerate(harness.allowances()):
        if i not in used:
            print(f"chosen difference that covered nothing in this run: {a.pair} {a.check} {a.kind} {a.series}")


def main() -> None:
    d = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MIGRATION_DIFFS_DIR", "target/migration-diffs"))
    unused_rows(d)
    files = sorted(d.glob("*.txt")) if d.is_dir() else []
    for f in files:
        lines = [x for x in f.read_text().splitlines() if x]
        if not lines:
            continue
        print(f"{f.stem}: {len(lines)} unchosen difference(s)")
        for s, n in sorted(Counter(shape(x) for x in lines).items()):
            print(f"    {n:5}  {s}")
    if not any(f.read_text().strip() for f in files):
        print("no unchosen differences")


if __name__ == "__main__":
    main()
