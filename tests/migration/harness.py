"""The judge of the migration tests: a strict exposition parser, a real
Prometheus, and the verdict against docs/migrating.md's table of chosen
differences.

Nothing here normalises a page. prometheus_client's text parser appends
`_total` to a counter's samples that lack it and rewrites `le` bounds as
floats, which hides exactly the renames these tests look for; `parse_page`
keeps every sample name and every label value as the page wrote it (label
values are unescaped, `\\\\`, `\\"` and `\\n`, as Prometheus stores them, and
nothing else is touched). Pages are also checked by Prometheus's own
parser: `promtool check metrics` for the text format, and the Prometheus
runs themselves for every format.
"""

from __future__ import annotations

import fnmatch
import http.client
import http.server
import json
import math
import os
import re
import shutil
import socket
import socketserver
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MIGRATING_MD = REPO / "docs" / "migrating.md"

# Prometheus 2.42's own Accept header, and the one Prometheus 3 sends with
# `scrape_protocols: [PrometheusText0.0.4]` (2.42 has no such setting: the
# text scrapes go through `AcceptProxy`, which sends this header instead).
ACCEPT_OPENMETRICS = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
ACCEPT_TEXT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

# The series Prometheus adds to every target by itself.
SCRAPE_SERIES = {
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
}


class ParseError(ValueError):
    """A page line the strict parser does not accept."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, headers: dict | None = None, timeout: float = 10) -> tuple[int, dict, str]:
    """GET `url`: status, headers (lower-case names) and body."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        path = u.path + (f"?{u.query}" if u.query else "")
        conn.request("GET", path or "/", headers=headers or {})
        r = conn.getresponse()
        body = r.read().decode("utf-8")
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        conn.close()


def wait_for(what: str, check, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, AssertionError, KeyError, ValueError) as e:
            last = e
        time.sleep(0.1)
    raise AssertionError(f"{what} not ready after {timeout}s (last: {last!r})")


# ---------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]  # sorted by label name
    value: float


@dataclass
class Page:
    """A parsed page: its samples, and per family name its TYPE and HELP."""

    samples: list[Sample] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    helps: dict[str, str] = field(default_factory=dict)
    sample_family: dict[str, str] = field(default_factory=dict)  # sample name -> family


_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(\{{.*?\}})?\s+(\S+)(?:\s+(\S+))?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*(,|$)')
SUFFIXES = ("_total", "_created", "_bucket", "_count", "_sum", "_gcount", "_gsum", "_info")


def unescape(value: str, line: str) -> str:
    def repl(m: re.Match) -> str:
        c = m.group(1)
        if c == "n":
            return "\n"
        if c in '\\"':
            return c
        raise ParseError(f"invalid escape \\{c} in {line!r}")

    return re.sub(r"\\(.)", repl, value)


def parse_labels(text: str, line: str) -> tuple[tuple[str, str], ...]:
    inner = text[1:-1]
    out: dict[str, str] = {}
    pos = 0
    while pos < len(inner):
        m = _LABEL.match(inner, pos)
        if not m:
            raise ParseError(f"bad labels at {inner[pos:]!r} in {line!r}")
        if m.group(1) in out:
            raise ParseError(f"label {m.group(1)} twice in {line!r}")
        out[m.group(1)] = unescape(m.group(2), line)
        pos = m.end()
    return tuple(sorted(out.items()))


def parse_value(text: str, line: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParseError(f"bad value {text!r} in {line!r}") from None


def split_labels(rest: str, line: str) -> tuple[str, str]:
    """`rest` starts with `{`: the label block (up to its closing brace,
    outside quotes) and what follows."""
    quoted = False
    i = 1
    while i < len(rest):
        c = rest[i]
        if quoted and c == "\\":
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "}" and not quoted:
            return rest[: i + 1], rest[i + 1 :]
        i += 1
    raise ParseError(f"unterminated labels in {line!r}")


def parse_sample(line: str, openmetrics: bool) -> Sample:
    if openmetrics and " # " in line:
        line = line[: line.index(" # ")]  # an exemplar: not a series
    m = re.match(rf"^({_NAME})", line)
    if not m:
        raise ParseError(f"bad sample line {line!r}")
    name, rest = m.group(1), line[m.end() :]
    labels: tuple[tuple[str, str], ...] = ()
    if rest.startswith("{"):
        block, rest = split_labels(rest, line)
        labels = parse_labels(block, line)
    parts = rest.split()
    if not rest[:1].isspace() or len(parts) not in (1, 2):
        raise ParseError(f"bad sample line {line!r}")
    return Sample(name, labels, parse_value(parts[0], line))


def family_of(sample_name: str, types: dict[str, str]) -> str | None:
    if sample_name in types:
        return sample_name
    for s in SUFFIXES:
        if sample_name.endswith(s) and sample_name[: -len(s)] in types:
            return sample_name[: -len(s)]
    return None


def parse_meta(line: str, page: Page, openmetrics: bool) -> None:
    parts = line.split(" ", 3)
    if len(parts) < 3 or parts[1] not in ("HELP", "TYPE", "UNIT", "EOF"):
        if openmetrics:
            raise ParseError(f"bad comment {line!r}")
        return  # text 0.0.4 allows other comments
    kind, name = parts[1], parts[2]
    rest = parts[3] if len(parts) > 3 else ""
    if kind == "TYPE":
        page.types[name] = rest
    elif kind == "HELP":
        page.helps[name] = rest if openmetrics else rest.replace("\\n", "\n").replace("\\\\", "\\")


def parse_page(body: str, openmetrics: bool) -> Page:
    """Parses a text 0.0.4 or OpenMetrics 1.0 page, normalising nothing."""
    page = Page()
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if openmetrics and (not lines or lines[-1] != "# EOF"):
        raise ParseError("an OpenMetrics page must end with # EOF")
    for line in lines:
        if line == "# EOF" and openmetrics:
            continue
        if line.startswith("#"):
            parse_meta(line, page, openmetrics)
        elif line.strip():
            s = parse_sample(line, openmetrics)
            page.samples.append(s)
            fam = family_of(s.name, page.types)
            page.sample_family[s.name] = fam if fam is not None else s.name
    keys = [(s.name, s.labels) for s in page.samples]
    if len(keys) != len(set(keys)):
        raise ParseError("a series appears twice on the page")
    return page


def promtool_check(body: str) -> None:
    """Prometheus's own text parser (promtool check metrics) accepts the
    page; lint findings (e.g. a counter without `_total`, which a peer may
    serve) are not parse errors."""
    r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode in (0, 3) and "error while linting" not in out, f"promtool: {out}"


# -------------------------------------------------------- differences


def series_str(name: str, labels) -> str:
    """`name{a="v",...}` with labels sorted and values escaped as in text."""
    items = sorted(labels.items() if isinstance(labels, dict) else labels)
    if not items:
        return name
    esc = [
        f'{k}="' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        for k, v in items
    ]
    return name + "{" + ",".join(esc) + "}"


@dataclass(frozen=True)
class Difference:
    check: str  # e.g. page-text, prometheus-default
    kind: str  # missing, extra, value, type, help
    series: str
    detail: str = ""

    def __str__(self) -> str:
        return f"[{self.check}] {self.kind} {self.series} {self.detail}".rstrip()


def same_value(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    # Sums of fractional observations may round differently when added in
    # another order; nothing else may differ (a timestamp 1 ms apart does).
    return a == b or math.isclose(a, b, rel_tol=1e-15, abs_tol=1e-9)


def diff_series(check: str, peer: dict[str, float], ours: dict[str, float]) -> list[Difference]:
    out = []
    for s in sorted(peer.keys() - ours.keys()):
        out.append(Difference(check, "missing", s, f"peer={peer[s]!r}"))
    for s in sorted(ours.keys() - peer.keys()):
        out.append(Difference(check, "extra", s, f"shmetrics={ours[s]!r}"))
    for s in sorted(peer.keys() & ours.keys()):
        if not same_value(peer[s], ours[s]):
            out.append(Difference(check, "value", s, f"peer={peer[s]!r} shmetrics={ours[s]!r}"))
    return out


def diff_meta(check: str, kind: str, peer: dict[str, str], ours: dict[str, str]) -> list[Difference]:
    """Per-name attributes (TYPE, HELP) of the series both sides serve."""
    out = []
    for name in sorted(peer.keys() & ours.keys()):
        if peer[name] != ours[name]:
            out.append(Difference(check, kind, name, f"peer={peer[name]!r} shmetrics={ours[name]!r}"))
    return out


def name_pids(labels, pids: dict[str, str] | None):
    """Labels with a `pid` label's value replaced by the writer's name in
    `pids` (pid -> e.g. `writer-0`): the only rewrite the comparison makes,
    as two runs never have the same pids. An unknown pid stays."""
    items = dict(labels)
    if pids and "pid" in items:
        items["pid"] = pids.get(items["pid"], items["pid"])
    return items


def page_series(page: Page, pids: dict[str, str] | None = None) -> dict[str, float]:
    return {series_str(s.name, name_pids(s.labels, pids)): s.value for s in page.samples}


def page_sample_types(page: Page) -> dict[str, str]:
    """Per sample name, the TYPE of its family ("untyped" without one)."""
    return {s.name: page.types.get(page.sample_family[s.name], "untyped") for s in page.samples}


def page_sample_helps(page: Page) -> dict[str, str]:
    return {s.name: page.helps.get(page.sample_family[s.name], "") for s in page.samples}


def diff_pages(
    check: str, peer: Page, ours: Page, peer_pids: dict | None = None, our_pids: dict | None = None
) -> list[Difference]:
    return (
        diff_series(check, page_series(peer, peer_pids), page_series(ours, our_pids))
        + diff_meta(check, "type", page_sample_types(peer), page_sample_types(ours))
        + diff_meta(check, "help", page_sample_helps(peer), page_sample_helps(ours))
    )


# ------------------------------------------------------- allowances


@dataclass(frozen=True)
class Allowance:
    pair: str
    check: str  # glob over Difference.check
    kind: str  # glob over Difference.kind
    series: str  # regex, full match over Difference.series
    reason: str

    def covers(self, pair: str, d: Difference) -> bool:
        return (
            fnmatch.fnmatchcase(pair, self.pair)
            and fnmatch.fnmatchcase(d.check, self.check)
            and fnmatch.fnmatchcase(d.kind, self.kind)
            and re.fullmatch(self.series, d.series, re.S) is not None
        )


TABLE_BEGIN = "<!-- chosen-differences:begin -->"
TABLE_END = "<!-- chosen-differences:end -->"


def parse_allowances(text: str) -> list[Allowance]:
    """The table between TABLE_BEGIN and TABLE_END: `| pair | check | kind |
    `series regex` | reason |`, one chosen difference a row."""
    assert text.count(TABLE_BEGIN) == 1 and text.count(TABLE_END) == 1, "no table markers"
    table = text.split(TABLE_BEGIN)[1].split(TABLE_END)[0]
    rows = [r.strip() for r in table.strip().splitlines() if r.strip()]
    assert len(rows) >= 2, "the table needs its header and separator"
    out = []
    for row in rows[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
        assert len(cells) == 5, f"a row of the chosen differences needs 5 cells: {row}"
        pair, check, kind, series, reason = cells
        series = series.strip("`").replace("\\|", "|")
        re.compile(series)
        assert reason, f"a chosen difference needs its reason: {row}"
        out.append(Allowance(pair.strip("`"), check.strip("`"), kind.strip("`"), series, reason))
    return out


def allowances() -> list[Allowance]:
    return parse_allowances(MIGRATING_MD.read_text())


def verdict(pair: str, diffs: list[Difference]) -> list[Difference]:
    """The differences docs/migrating.md does not list as chosen."""
    allowed = allowances()
    return [d for d in diffs if not any(a.covers(pair, d) for a in allowed)]


# Every check's unchosen differences, in full, one file a check and pair.
DIFFS_DIR = Path(os.environ.get("MIGRATION_DIFFS_DIR", REPO / "target" / "migration-diffs"))


def record_used(pair: str, diffs: list[Difference]) -> None:
    """Appends to DIFFS_DIR/used-rows.log the table rows (by number) that
    covered a difference, so that summary.py can name the rows a full run
    never used."""
    allowed = allowances()
    used = {i for d in diffs for i, a in enumerate(allowed) if a.covers(pair, d)}
    DIFFS_DIR.mkdir(parents=True, exist_ok=True)
    with open(DIFFS_DIR / "used-rows.log", "a") as f:
        f.write("".join(f"{i}\n" for i in sorted(used)))


def assert_no_unchosen(pair: str, diffs: list[Difference]) -> None:
    left = verdict(pair, diffs)
    record_used(pair, diffs)
    checks = sorted({d.check for d in diffs}) or ["none"]
    out = DIFFS_DIR / f"{pair.replace('/', '-')}.{'+'.join(checks)}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(f"{d}\n" for d in left))
    report = "\n".join(str(d) for d in left[:200])
    more = f"\n... and {len(left) - 200} more" if len(left) > 200 else ""
    assert not left, (
        f"{len(left)} difference(s) between {pair} and shmetrics that docs/migrating.md "
        f"does not list as chosen:\n{report}{more}"
    )


# --------------------------------------------------- a real Prometheus


class AcceptProxy:
    """Forwards GETs to `upstream` with Prometheus 3's Accept header for
    `scrape_protocols: [PrometheusText0.0.4]` instead of the scraper's:
    Prometheus 2.42 has no scrape_protocols setting."""

    def __init__(self, upstream: str, accept: str = ACCEPT_TEXT) -> None:
        self.upstream = upstream.rstrip("/")
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                status, headers, body = http_get(proxy.upstream + self.path, {"Accept": accept})
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", headers.get("content-type", "text/plain"))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class StaticPage:
    """Serves one page at /metrics as text 0.0.4: a peer's page rendered
    once its writers are done (client_ruby's Text.marshal, what its
    Prometheus::Middleware::Exporter serves)."""

    def __init__(self, body: str) -> None:
        data = body.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def prometheus3() -> str:
    """Prometheus 3, as scripts/build-peers.sh builds it (./run-tests
    does): `$SHMETRICS_PROMETHEUS3`, else under the target directory."""
    path = os.environ.get("SHMETRICS_PROMETHEUS3") or str(
        Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target") / "peers/prometheus-v0.316.0/bin/prometheus"
    )
    assert os.access(path, os.X_OK), f"no Prometheus 3 at {path}: run scripts/build-peers.sh prometheus"
    return path


class Prometheus:
    """Debian's Prometheus (2.42), or the one at `binary` (Prometheus 3:
    see prometheus3()), scraping `targets` (job name -> host:port, path
    /metrics) every 2 s (and a scrape may take 2 s, on a busy machine),
    with its default scrape settings otherwise (so 2.42 asks for
    OpenMetrics first, or protobuf with native histograms enabled;
    Prometheus 3 for OpenMetrics with UTF-8 names first)."""

    def __init__(self, tmp: Path, targets: dict[str, str], features: str = "", binary: str | None = None) -> None:
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        jobs = "".join(scrape_job(job, addr) for job, addr in targets.items())
        conf = tmp / "prometheus.yml"
        conf.write_text(
            "global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n" "scrape_configs:\n" + jobs
        )
        args = [
            binary or shutil.which("prometheus") or "prometheus",
            f"--config.file={conf}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        if features:
            args.append(f"--enable-feature={features}")
        self.log = open(tmp / "prometheus.log", "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("prometheus", lambda: self.proc.poll() is None and http_get(self.url("/-/ready"))[0] == 200)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def api(self, path: str, **params: str) -> object:
        q = urllib.parse.urlencode(params)
        status, _, body = http_get(self.url(f"/api/v1/{path}?{q}"))
        doc = json.loads(body)
        assert status == 200 and doc["status"] == "success", f"{path}: {body[:500]}"
        return doc["data"]

    def targets(self) -> list[dict]:
        return self.api("targets")["activeTargets"]  # type: ignore[index]

    def scraped_after(self, t: float) -> bool:
        """Every target was scraped, successfully, after wall time `t`."""
        ts = self.targets()
        for target in ts:
            assert target["health"] == "up", f"{target['labels']['job']}: {target['lastError']}"
        return all(_rfc3339(x["lastScrape"]) > t for x in ts) and len(ts) > 0

    def wait_scraped_after(self, t: float) -> float:
        wait_for("a scrape of every target", lambda: self.scraped_after(t), timeout=30)
        return time.time()

    def series(self, job: str, at: float, pids: dict[str, str] | None = None) -> dict[str, float]:
        """The job's series at `at` (their newest values), without the
        target's labels (job, instance) and the series Prometheus adds."""
        data = self.api("query", query=f'{{job="{job}"}}', time=f"{at:.3f}")
        out = {}
        for r in data["result"]:  # type: ignore[index]
            labels = dict(r["metric"])
            name = labels.pop("__name__")
            if name in SCRAPE_SERIES:
                continue
            labels.pop("job")
            labels.pop("instance")
            out[series_str(name, name_pids(labels, pids))] = float(r["value"][1])
        return out

    def metadata(self, job: str) -> dict[str, tuple[str, str]]:
        """Per metric name, (type, help) as the target's metadata gives it."""
        data = self.api("targets/metadata", match_target=f'{{job="{job}"}}')
        return {m["metric"]: (m["type"], m["help"]) for m in data}  # type: ignore[union-attr]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def scrape_job(job: str, target: str) -> str:
    """A scrape_configs entry for `host:port`, or `host:port?a=b` (the
    query given as the job's `params`), path /metrics."""
    addr, _, query = target.partition("?")
    out = f"  - job_name: {job!r}\n    static_configs:\n      - targets: [{addr!r}]\n"
    params = urllib.parse.parse_qs(query)
    if params:
        out += "    params:\n" + "".join(f"      {k}: {v!r}\n" for k, v in params.items())
    return out


def exporter_page(address: str, openmetrics: bool) -> Page:
    """The exporter's page as curl (no Accept) or Prometheus (its
    OpenMetrics-first Accept) asks for it, parsed in the format the
    exporter chose (with text-only hints it answers text 0.0.4, as the
    peer would); text pages are checked by promtool."""
    headers = {"Accept": ACCEPT_OPENMETRICS} if openmetrics else {}
    status, got, body = http_get(f"http://{address}/metrics", headers)
    served = content_type_of(got)
    allowed = ("application/openmetrics-text", "text/plain") if openmetrics else ("text/plain",)
    assert status == 200 and served in allowed, (status, got)
    if served == "text/plain":
        promtool_check(body)
    return parse_page(body, served == "application/openmetrics-text")


ACCEPT_PROTOBUF = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"


def assert_serves_protobuf(address: str) -> None:
    """The exporter answers Prometheus's protobuf Accept with protobuf or,
    for families hinted text-only, text 0.0.4 (the Prometheus run then
    compares what that format gives)."""
    status, got, _ = http_get_bytes(f"http://{address}/metrics", {"Accept": ACCEPT_PROTOBUF + ";q=1,*/*;q=0.1"})
    assert status == 200 and content_type_of(got) in ("application/vnd.google.protobuf", "text/plain"), got


def http_get_bytes(url: str, headers: dict) -> tuple[int, dict, bytes]:
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request("GET", u.path, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def _rfc3339(s: str) -> float:
    """Prometheus's lastScrape (RFC 3339 with nanoseconds) as a Unix time."""
    from datetime import datetime

    s = re.sub(r"(\.\d{6})\d*", r"\1", s).replace("Z", "+00:00")
    return datetime.fromisoformat(s).timestamp()


def diff_prometheus(
    check: str, prom: Prometheus, peer_job: str, our_job: str, at: float,
    peer_pids: dict | None = None, our_pids: dict | None = None,
) -> list[Difference]:
    """The stored series and the metadata of the two jobs, compared."""
    peer, ours = prom.series(peer_job, at, peer_pids), prom.series(our_job, at, our_pids)
    return diff_series(check, peer, ours) + diff_metadata(
        check, prom.metadata(peer_job), prom.metadata(our_job)
    )


def diff_metadata(check: str, pm: dict[str, tuple[str, str]], om: dict[str, tuple[str, str]]) -> list[Difference]:
    """Targets' metadata (metric name -> type, help). A counter whose
    metadata one side names `X_total` (text and protobuf name the family
    so) and the other `X` (OpenMetrics does), with the same type and help,
    is one difference, `metadata-renamed`, written `X_total -> X` or
    `X -> X_total` (peer's name first). So is an OpenMetrics info `X` that
    the other side names `X_info`, a gauge with the same help (what the
    text and protobuf formats make of it), written `X -> X_info` with the
    types in its detail. A type difference is written `X peer -> ours`
    (`myapp_state stateset -> gauge`)."""
    diffs = []
    pm, om = dict(pm), dict(om)
    for name in sorted(pm.keys() - om.keys()):
        other = name.removesuffix("_total") if name.endswith("_total") else name + "_total"
        if other in om and other not in pm and om[other] == pm[name]:
            diffs.append(Difference(check, "metadata-renamed", f"{name} -> {other}", f"{pm[name]!r}"))
            del pm[name], om[other]
    for name in sorted(pm.keys() - om.keys()):
        other = name + "_info"
        if pm[name][0] == "info" and other in om and other not in pm and om[other] == ("gauge", pm[name][1]):
            diffs.append(Difference(check, "metadata-renamed", f"{name} -> {other}", "info -> gauge"))
            del pm[name], om[other]
    for name in sorted(pm.keys() - om.keys()):
        diffs.append(Difference(check, "metadata-missing", name, f"peer={pm[name]!r}"))
    for name in sorted(om.keys() - pm.keys()):
        diffs.append(Difference(check, "metadata-extra", name, f"shmetrics={om[name]!r}"))
    for name in sorted(pm.keys() & om.keys()):
        if pm[name][0] != om[name][0]:
            diffs.append(Difference(check, "type", f"{name} {pm[name][0]} -> {om[name][0]}"))
        if pm[name][1] != om[name][1]:
            diffs.append(Difference(check, "help", name, f"peer={pm[name][1]!r} shmetrics={om[name][1]!r}"))
    return diffs


def content_type_of(headers: dict) -> str:
    return headers.get("content-type", "").split(";")[0].strip()


def env(name: str) -> str:
    value = os.environ.get(name)
    assert value, f"${name} must be set (scripts/migration-tests.sh sets it)"
    return value
