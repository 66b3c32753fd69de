#!/usr/bin/env bash
# The Python binding's fork-safety tests (bindings/python/tests/
# test_fork_safety.py: children forked while a thread renders and the
# store file is replaced, while a thread holds a registry's lock, while
# one holds the publisher's) under valgrind's memcheck, every forked
# child too (issue 33, item 2). Fails when the tests fail, and on
#   - any invalid read, write or free, overlapping copy or other memory
#     error of any process, wherever valgrind sees it (a bad write of the
#     native module can surface in CPython's frames);
#   - any use of uninitialised memory (a jump or an address that depends
#     on it, a system call passed it), but CPython 3.11's own: a zero int
#     made by _PyLong_New (int("0"), int.from_bytes(b"\0..."), x & y == 0)
#     has one digit CPython never writes, which its small-int lookup
#     multiplies by the size 0 and so never really uses; memcheck cannot
#     tell, and the pointer to the small int 0 it computes from it taints
#     every later use of that pointer, in stacks of all kinds (3.12
#     writes the digit). These are told apart by where the uninitialised
#     bytes come from (--track-origins: a heap block of _PyLong_New), not
#     by suppressions, which match where an error is seen and would hide
#     errors of ours seen in the same CPython frames;
#   - any definite leak (memory no pointer reaches any more) allocated
#     with a frame of the native module (shmetrics/_native*.so, Rust's
#     std included) in its stack; CPython leaves blocks of its own at
#     exit, which are not ours to judge. In a forked child, what another
#     thread of the parent held at the fork (a render's buffers) is lost
#     for good, as that thread does not exist there: a child's leaks
#     count only if its own thread, the main one, made them.
# There is no --error-exitcode: CPython's errors above would set it, in
# the parent and in every child forked after them; each process's report
# (an XML file) is read instead, and every finding printed.
# PYTHONMALLOC=malloc makes CPython allocate with malloc, which memcheck
# tracks block by block, instead of its own arenas. The tests use small
# stores (a few hundred MB of sparse file): the leak check reads every
# mapped page of every process, which the default store's 18 GB made
# impractical. Third-party pytest plugins are not loaded (the tests need
# none; under valgrind their imports take most of a minute).
# Called by ./run-tests after the python binding's tests; safe to run
# alone. About two and a half minutes; the run under valgrind is stopped,
# and fails, after eight.
#   scripts/python-valgrind.sh [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_rust
ensure_apt valgrind
export PATH="$HOME/.cargo/bin:$PATH"
ensure_python_env

say "python binding: the fork-safety tests under valgrind (memcheck; definite leaks of the native module)"
out=$(mktemp -d /tmp/shmetrics-python-valgrind.XXXXXX)
trap 'rm -rf "$out"' EXIT
start=$SECONDS
status=0
# One XML report per process (%p: each forked child writes its own).
PYTHONMALLOC=malloc PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 timeout 480 \
  valgrind --tool=memcheck --trace-children=yes --track-origins=yes \
  --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=none \
  --num-callers=40 --xml=yes --xml-file="$out/memcheck.%p.xml" \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider bindings/python/tests/test_fork_safety.py "$@" \
  || status=$?
say "python binding under valgrind: $((SECONDS - start)) s"
"$VENV/bin/python" - "$out" "$status" <<'PY'
import glob
import sys
import xml.etree.ElementTree as ET

out, status = sys.argv[1], int(sys.argv[2])
NATIVE = "/shmetrics/_native"


def frames(stack):
    if stack is None:
        return []
    return [(f.findtext("obj") or "", f.findtext("fn") or "?", f.findtext("file") or "", f.findtext("line") or "")
            for f in stack.iter("frame")]


def show(error):
    what = error.find("xwhat")
    text = what.findtext("text") if what is not None else error.findtext("what")
    lines = [f"  {error.findtext('kind')}: {text}"]
    for stack, title in zip(error.findall("stack"), ("", error.findtext("auxwhat") or "")):
        if title:
            lines.append(f"    {title}")
        for obj, fn, file, line in frames(stack):
            lines.append(f"      {fn} ({f'{file}:{line}' if file else obj})")
    return "\n".join(lines)


def cpython_zero_int(error):
    """An uninitialised value whose bytes come from the digit CPython 3.11
    leaves unwritten in a zero int (the script's header)."""
    stacks = error.findall("stack")
    origin = [fn for _, fn, _, _ in frames(stacks[1])] if len(stacks) > 1 else []
    return "_PyLong_New" in origin[:3]


roots = []
for path in sorted(glob.glob(f"{out}/memcheck.*.xml")):
    try:
        roots.append(ET.parse(path).getroot())
    except ET.ParseError as e:
        sys.exit(f"python-valgrind: {path}: unreadable report ({e}): did valgrind die?")
if not roots:
    sys.exit("python-valgrind: no valgrind report was written")
pids = {r.findtext("pid") for r in roots}
bad, noise, fork_lost = [], 0, 0
for root in roots:
    pid = root.findtext("pid")
    forked = root.findtext("ppid") in pids
    for error in root.iter("error"):
        kind = error.findtext("kind") or ""
        if kind.startswith("Leak_"):
            stack = frames(error.find("stack"))
            if kind != "Leak_DefinitelyLost" or not any(NATIVE in obj for obj, *_ in stack):
                continue
            if forked and any(fn in ("start_thread", "clone", "clone3") for _, fn, _, _ in stack):
                fork_lost += 1
                continue
            bad.append(f"process {pid}: a definite leak of the native module\n{show(error)}")
        elif kind.startswith("Uninit") and cpython_zero_int(error):
            noise += 1
        else:
            bad.append(f"process {pid}: a memory error\n{show(error)}")
print(f"python-valgrind: {len(roots)} processes checked (the test run and the children it forked); "
      f"left aside: {noise} uses of CPython 3.11's unwritten zero-int digit, {fork_lost} blocks of "
      "the native module that another thread held when a child was forked")
for b in bad:
    print(b)
if status != 0:
    print(f"python-valgrind: the tests under valgrind exited {status}")
if bad or status:
    sys.exit(f"python-valgrind: FAILED ({len(bad)} finding(s) above)")
print("python-valgrind: no memory error, no definite leak of the native module")
PY
