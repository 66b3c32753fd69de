"""Debian's Phusion Passenger (mod_passenger in an Apache of the test's
own) serving a WSGI app with the site of docs/python.md: the app of
test_uwsgi.py (_uwsgi_app.py), metrics created at import, no fork hook.
Under a bounded load over loopback, the exporter's page (`shmetrics
serve`) must count exactly the successful responses the client saw,
through the ways Passenger spawns, stops, restarts and loses its
processes. Only a request in flight when its process was killed may be
counted or not: the client saw it fail, so it is the slack. (A kill can
fail one more request, which Passenger hands the dead process; the app
never saw that one.)"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from conftest import REPO, Samples, samples_of, shmetrics_bin
from test_gunicorn import get, stop_all
from test_uwsgi import Load, assert_counted, background_load, listening, wait_for

HERE = Path(__file__).resolve().parent
DOC = REPO / "docs" / "python.md"
HTTPD_CONF = REPO / "tests" / "servers" / "passenger" / "httpd.conf"
APACHE = "/usr/sbin/apache2"


def doc_blocks() -> tuple[str, str]:
    """docs/python.md's Passenger startup file and Apache site."""
    text = DOC.read_text()
    sites = re.findall(r"```apache\n(.*?)```", text, re.S)
    assert len(sites) == 1, "docs/python.md has one apache snippet, the Passenger site"
    startup = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "passenger_wsgi.py" in b]
    assert len(startup) == 1, "docs/python.md shows passenger_wsgi.py once"
    return startup[0], sites[0]


def passenger_python() -> str:
    """The virtualenv of Debian's python3 with the binding, which the app's
    user can run (scripts/setup.sh's ensure_passenger_python_env)."""
    path = os.environ.get("SHMETRICS_PASSENGER_PYTHON") or str(REPO / "target" / "passenger-venv" / "bin" / "python")
    for need in (path, APACHE, "/usr/sbin/passenger-status"):
        if not os.access(need, os.X_OK):
            raise RuntimeError(f"{need} is missing: ./run-tests (scripts/setup.sh's ensure_python_env) installs it")
    return path


def apache_log(dir: Path) -> str:
    """Apache's error log, where Passenger and the app's output go too."""
    log = dir / "apache-error.log"
    return log.read_text(errors="replace") if log.exists() else ""


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    exporter_port: int
    dir: Path
    app: Path

    def log_text(self) -> str:
        return apache_log(self.dir)

    def page(self) -> Samples:
        status, body = get(self.exporter_port, "/metrics")
        assert status == 200
        return samples_of(body.decode())

    def passenger(self, *args: str) -> str:
        """A Passenger command (passenger-status, passenger-config) on this
        instance."""
        env = dict(os.environ, PASSENGER_INSTANCE_REGISTRY_DIR=str(self.dir / "registry"))
        r = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"{args}: {r.stdout}{r.stderr}"
        return r.stdout

    def processes(self) -> set[int]:
        """The app's processes, as Passenger lists them."""
        return {int(p) for p in re.findall(r"\* PID: (\d+)", self.passenger("passenger-status"))}


def app_user() -> tuple[str, str]:
    """Who runs the app: www-data when the test runs as root (Passenger
    runs it as its startup file's owner), else the test's own user."""
    if os.geteuid() == 0:
        return "www-data", "www-data"
    return pwd.getpwuid(os.geteuid()).pw_name, grp.getgrgid(os.getegid()).gr_name


def as_app_user() -> list[str]:
    """The command prefix that runs a command as the app's user (`shmetrics
    inspect` has no option to trust another owner's store)."""
    return ["runuser", "-u", app_user()[0], "--"] if os.geteuid() == 0 else []


def site_for(app: Path, store: Path, port: int, python: str, server: Sequence[str], vhost: Sequence[str]) -> str:
    """The doc's site with this test's port, folder, interpreter and store,
    `server` lines before it and `vhost` lines inside it."""
    _, site = doc_blocks()
    for old, new in [("*:80", f"*:{port}"), ("/srv/myapp/venv/bin/python", python),
                     ("/srv/myapp", str(app)), ("/dev/shm/myapp.shm", str(store))]:
        assert old in site, f"the doc's site has no {old!r}"
        site = site.replace(old, new)
    site = site.replace("</VirtualHost>", "".join(f"    {line}\n" for line in vhost) + "</VirtualHost>")
    return "\n".join([*server, site])


@contextmanager
def passenger_and_exporter(server: Sequence[str] = (), vhost: Sequence[str] = ()) -> Iterator[Server]:
    """Apache with mod_passenger serving the app with the doc's site (plus
    `server` and `vhost` lines), and `shmetrics serve` on its store, both
    up; stops both after. The folder is under /tmp, not pytest's (which
    only root may enter): the app's user must reach the app and the store."""
    python = passenger_python()
    user, group = app_user()
    uid, gid = pwd.getpwnam(user).pw_uid, grp.getgrnam(group).gr_gid
    dir = Path(tempfile.mkdtemp(prefix="shmetrics-passenger-"))
    dir.chmod(0o755)
    app = dir / "app"
    (app / "public").mkdir(parents=True)
    startup, _ = doc_blocks()
    (app / "passenger_wsgi.py").write_text(startup.replace("from myapp ", "from _uwsgi_app "))
    shutil.copy(HERE / "_uwsgi_app.py", app)
    (dir / "registry").mkdir()
    data = dir / "data"  # the app's user creates the store here
    data.mkdir()
    for path in (app, app / "public", app / "passenger_wsgi.py", app / "_uwsgi_app.py", data):
        os.chown(path, uid, gid)
    store = data / "app.shm"
    # TMPDIR: where Passenger keeps its spawn folders and error reports.
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(dir)}

    def start_apache(port: int) -> subprocess.Popen:
        conf = HTTPD_CONF.read_text()
        for old, new in [("@DIR@", str(dir)), ("@PORT@", str(port)), ("@USER@", user), ("@GROUP@", group)]:
            conf = conf.replace(old, new)
        (dir / "apache2.conf").write_text(conf + site_for(app, store, port, python, server, vhost))
        # In a session of its own: Apache signals its process group.
        return subprocess.Popen([APACHE, "-f", str(dir / "apache2.conf"), "-DFOREGROUND"], env=env,
                                start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start_exporter(port: int) -> subprocess.Popen:
        owner = ["--store.owner", user] if os.geteuid() == 0 else []
        return subprocess.Popen([shmetrics_bin(), "serve", "--store", str(store), *owner,
                                 "--listen", f"127.0.0.1:{port}"], stderr=subprocess.PIPE)

    proc, exporter = None, None
    try:
        proc, port = listening("Apache with Passenger", "/ready", start_apache, lambda: apache_log(dir))
        exporter, exporter_port = listening("the exporter", "/healthz", start_exporter)
        yield Server(proc, port, exporter_port, dir, app)
    finally:
        stop_all([exporter, proc])
        shutil.rmtree(dir, ignore_errors=True)


def settle(load: Load) -> None:
    """Passenger answers a request whose process died under it with a
    502 page: such a request failed, as one with no answer does."""
    gone = [b for b in load.bad if b[0] == 502]
    load.failed += len(gone)
    load.bad = [b for b in load.bad if b[0] != 502]


def test_smart_spawning():
    with passenger_and_exporter(vhost=["PassengerSpawnMethod smart", "PassengerMinInstances 4"]) as server:
        wait_for("4 processes", lambda: len(server.processes()) == 4, timeout=60)
        load = Load()
        load.run(server.port, 800)
        assert load.failed == 0, server.log_text()[-3000:]
        assert len(load.served) >= 2, f"only {load.served} served"
        assert load.served <= server.processes()
        # No preloader for Python in Passenger 6.0.17: each process imported
        # the app itself (docs/python.md).
        assert load.imported_in == load.served
        assert "wsgi-loader.py" in Path(f"/proc/{min(load.served)}/cmdline").read_text()
        assert_counted(server, load)


@dataclass
class Watch:
    """The app's processes, as Passenger lists them, sampled by a thread
    (passenger-status is a Ruby program: the load's threads must not run
    it between requests)."""
    now: set = field(default_factory=set)
    seen: set = field(default_factory=set)
    most: int = 0

    def sample(self, server: Server) -> None:
        now = server.processes()
        self.now = now
        self.seen |= now
        self.most = max(self.most, len(now))


@contextmanager
def watching(server: Server) -> Iterator[Watch]:
    watch, stop = Watch(), threading.Event()

    def loop() -> None:
        while not stop.wait(0.25):
            watch.sample(server)

    watch.sample(server)
    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield watch
    finally:
        stop.set()
        thread.join()


def test_idle_processes_stop_and_load_spawns_them():
    with passenger_and_exporter(["PassengerPoolIdleTime 2"]) as server:
        wait_for("1 process", lambda: len(server.processes()) == 1, timeout=60)
        load = Load()
        with watching(server) as watch:
            for _round in range(2):
                watch.most = 0
                # Slow enough requests that 1 process is overloaded: Passenger
                # spawns more, up to PassengerMaxPoolSize.
                load.run_until(server.port, lambda: watch.most >= 4, path="/work?sleep=0.05", timeout=60)
                assert watch.most == 4, f"Passenger spawned up to {watch.most} processes\n{server.log_text()[-3000:]}"
                # The load stops: idle processes stop, down to PassengerMinInstances.
                wait_for("idle processes to stop", lambda: len(watch.now) == 1, timeout=60)
            stopped = watch.seen - watch.now
        assert len(stopped) >= 6, f"Passenger stopped only {stopped}"
        assert not any(Path(f"/proc/{pid}").exists() for pid in stopped), "stopped processes exited"
        load.run(server.port, 100)
        assert load.failed == 0, server.log_text()[-3000:]
        assert load.served >= stopped, "every process served before it stopped"
        assert_counted(server, load)
        # A stopped process's writer slot goes to a later process.
        out = subprocess.run([*as_app_user(), shmetrics_bin(), "inspect", "--store", str(server.dir / "data" / "app.shm")],
                             capture_output=True, text=True, check=True, timeout=60).stdout
        found = re.search(r"writers\s+(\d+) live, (\d+) dead, \d+ slots; (\d+) claims, (\d+) reuses", out)
        assert found, out
        live, dead, claims, reuses = map(int, found.groups())
        assert claims >= len(load.served) and reuses > 0 and live + dead < len(load.served), out


def test_restart_app():
    with passenger_and_exporter(vhost=["PassengerMinInstances 4"]) as server:
        wait_for("4 processes", lambda: len(server.processes()) == 4, timeout=60)
        before = server.processes()
        load = Load()
        with background_load(server.port, load):
            server.passenger("passenger-config", "restart-app", str(server.app))
            wait_for("new processes", lambda: not server.processes() & before, timeout=60)
            wait_for("a new process to serve", lambda: bool(load.served - before), timeout=30)
        settle(load)
        assert load.served & before and load.served - before, "old and new processes served"
        assert load.failed == 0, f"{load.failed} requests failed across a restart\n{server.log_text()[-3000:]}"
        s = assert_counted(server, load)
        assert s[("app_requests_total", frozenset({("route", "/work")}))] == load.ok


def test_process_killed_with_sigkill():
    with passenger_and_exporter(vhost=["PassengerMinInstances 4"]) as server:
        wait_for("4 processes", lambda: len(server.processes()) == 4, timeout=60)
        before = server.processes()
        load = Load()
        with background_load(server.port, load):
            victim = sorted(load.served & before)[0]
            os.kill(victim, signal.SIGKILL)  # under load: it may be in a request
            wait_for("Passenger to replace it", lambda: victim not in server.processes()
                     and len(server.processes()) == 4, timeout=60)
            wait_for("the new process to serve", lambda: bool(load.served - before), timeout=30)
        settle(load)
        # The request in flight in the killed process fails (Passenger
        # answers 502), and so may the next one, which Passenger hands the
        # dead process before it sees it died: that one never reaches the
        # app (docs/python.md).
        assert load.failed <= 2, f"{load.failed} requests failed\n{server.log_text()[-3000:]}"
        s = assert_counted(server, load)
        assert s[("app_requests_total", frozenset({("route", "/work")}))] <= load.ok + 1, "one request in flight"
