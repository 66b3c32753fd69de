#!/usr/bin/env python3
"""Extracts the runnable code blocks of the docs for tests/packaging/run.sh.

A block is runnable when the line right before its opening fence is

    <!-- packaging-test: ENV... [file=NAME] -->

naming the environments it runs in (wheel, deb, composer, luarocks, ...).

    docblocks.py ENV OUTDIR DOC...

writes each block of ENV, in the order of the DOCs given, to
OUTDIR/NNN.LANG (with /dev/shm/ replaced by $SHM_DIR/, so that the test's
stores do not meet anyone else's) and prints one line per block:

    NNN.LANG <TAB> LANG <TAB> NAME or - <TAB> DOC:LINE

A marker that is not followed by a fence, or a fence left open, is an
error: the docs and the test must not drift apart silently.
"""

import os
import re
import sys

MARKER = re.compile(r"^<!-- packaging-test: (.+?) -->$")
FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)$")


def blocks(path):
    """Yields (line number, envs, options, lang, text) for each marked block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        words = m.group(1).split()
        envs = {w for w in words if "=" not in w}
        opts = dict(w.split("=", 1) for w in words if "=" in w)
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not fence or not fence.group(1):
            sys.exit(f"{path}:{i + 1}: a packaging-test marker must be followed by a fence with a language")
        start = i + 2
        end = start
        while end < len(lines) and lines[end] != "```":
            end += 1
        if end == len(lines):
            sys.exit(f"{path}:{i + 2}: the fence is never closed")
        yield i + 2, envs, opts, fence.group(1), "\n".join(lines[start:end]) + "\n"
        i = end + 1


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    env, outdir, docs = sys.argv[1], sys.argv[2], sys.argv[3:]
    shm_dir = os.environ["SHM_DIR"].rstrip("/")
    n = 0
    for doc in docs:
        for line, envs, opts, lang, text in blocks(doc):
            if env not in envs:
                continue
            n += 1
            name = f"{n:03d}.{lang}"
            with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
                f.write(text.replace("/dev/shm/", shm_dir + "/"))
            print(f"{name}\t{lang}\t{opts.get('file', '-')}\t{doc}:{line}")


if __name__ == "__main__":
    main()
