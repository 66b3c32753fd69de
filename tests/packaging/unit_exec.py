#!/usr/bin/env python3
"""Starts a service's ExecStart= as systemd would, without systemd as PID 1.

This machine (a container) has no systemd running, so tests/packaging
cannot `systemctl start` the packaged unit. This script reads the unit
file and its EnvironmentFile= the way systemd documents it
(systemd.exec(5), "EnvironmentFile="; systemd.service(5), "Command
lines") and starts the command the way systemd's executor would:

    unit_exec.py show UNIT     prints ExecStart= expanded, one word a line
    unit_exec.py exec UNIT     replaces itself with the service's process

What `exec` applies: the environment files' variables (systemd's rules for
quotes, escapes, comments and continuations) and `$VAR`/`${VAR}`
substitution in ExecStart= (`$VAR` alone splits at white space into
words, `${VAR}` does not, `$$` is a dollar); User= and Group= with the
user's supplementary groups (initgroups, as systemd); the environment
systemd gives a service (only PATH, the user's USER, LOGNAME, HOME and
SHELL, INVOCATION_ID, and the files' variables); UMask=;
WorkingDirectory= (the default, `/`); stdin from /dev/null;
NoNewPrivileges= and an empty CapabilityBoundingSet=/AmbientCapabilities=
(through setpriv).

What it does not apply: the sandboxing directives (file system and
namespace protections, the system call filter, address families), which
need systemd to set up; `systemd-analyze security --offline=true` rates
those from the unit file instead, and `systemd-analyze verify` checks the
unit loads. A directive this script does not know fails it, so a new one
that changes how the command runs cannot be missed.
"""

import json
import os
import pwd
import grp
import re
import sys

# Directives this script applies, and sandboxing ones it leaves to systemd.
APPLIED = {
    "Type", "User", "Group", "EnvironmentFile", "ExecStart", "UMask",
    "NoNewPrivileges", "CapabilityBoundingSet", "AmbientCapabilities",
}
# Directives that do not change the started process (restart policy).
NO_EFFECT = {"Restart", "RestartSec"}
NOT_APPLIED = {
    "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "DevicePolicy",
    "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
    "ProtectControlGroups", "ProtectClock", "ProtectHostname", "PrivateMounts",
    "RestrictAddressFamilies", "RestrictNamespaces", "RestrictRealtime",
    "RestrictSUIDSGID", "LockPersonality", "MemoryDenyWriteExecute", "KeyringMode",
    "SystemCallArchitectures", "SystemCallFilter", "SystemCallErrorNumber",
}
# systemd 252's default PATH for services (Debian 12, merged /usr).
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def fail(msg):
    print(f"unit_exec.py: {msg}", file=sys.stderr)
    sys.exit(1)


def parse_unit(text):
    """{section: [(key, value), ...]} of a unit file: comments (# ;),
    continuation lines (a final backslash), repeated keys kept in order."""
    sections, current, pending = {}, None, ""
    for raw in text.splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        if current is None or "=" not in line:
            fail(f"not a unit file line: {line!r}")
        key, value = line.split("=", 1)
        current.append((key.strip(), value.strip()))
    if pending:
        current.append(tuple(s.strip() for s in pending.split("=", 1)))
    return sections


def parse_env_file(text):
    """The assignments of an EnvironmentFile=, by systemd.exec(5)'s rules."""
    env = {}
    state, key, value, keep = "pre_key", "", "", 0
    ws = " \t\r"

    def emit():
        k = key.rstrip(ws)
        if ENV_NAME.match(k):
            env[k] = value[:keep]
        else:
            print(f"unit_exec.py: ignoring the invalid variable name {k!r}", file=sys.stderr)

    for c in text:
        if state == "pre_key":
            if c in ws or c == "\n":
                continue
            if c in "#;":
                state = "comment"
            else:
                key, state = c, "key"
        elif state == "key":
            if c == "\n":
                state = "pre_key"  # no "=": ignored
            elif c == "=":
                value, keep, state = "", 0, "pre_value"
            else:
                key += c
        elif state == "pre_value":
            # Leading white space, and what follows a closing quote.
            if c in ws:
                continue
            if c == "\n":
                emit()
                state = "pre_key"
            elif c == "'":
                state = "single"
            elif c == '"':
                state = "double"
            elif c == "\\":
                state = "value_escape"
            else:
                value += c
                keep = len(value)
                state = "value"
        elif state == "value":
            if c == "\n":
                emit()
                state = "pre_key"
            elif c == "\\":
                state = "value_escape"
            else:
                value += c
                if c not in ws:
                    keep = len(value)
        elif state == "value_escape":
            if c != "\n":  # a backslash-newline continues the line
                value += c
                keep = len(value)
            state = "value"
        elif state == "single":
            if c == "'":
                state = "pre_value"
            else:
                value += c
                keep = len(value)
        elif state == "double":
            if c == '"':
                state = "pre_value"
            elif c == "\\":
                state = "double_escape"
            else:
                value += c
                keep = len(value)
        elif state == "double_escape":
            if c in '"\\`$':
                value += c
            elif c != "\n":
                value += "\\" + c
            keep = len(value)
            state = "double"
        elif state == "comment":
            if c == "\\":
                state = "comment_escape"
            elif c == "\n":
                state = "pre_key"
        elif state == "comment_escape":
            state = "comment"
    if state in ("pre_value", "value", "value_escape", "single", "double", "double_escape"):
        emit()
    return env


def split_words(line):
    """An ExecStart= command line's words: white space separates them,
    double and single quotes group them, backslash escapes (C escapes)."""
    words, word, in_word, quote, i = [], "", False, None, 0
    escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", " ": " ", "s": " "}
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            nxt = line[i + 1]
            if nxt not in escapes:
                fail(f"an escape this script does not know in {line!r}: \\{nxt}")
            word += escapes[nxt]
            in_word = True
            i += 2
            continue
        if quote:
            if c == quote:
                quote = None
            else:
                word += c
        elif c in "\"'":
            quote, in_word = c, True
        elif c in " \t":
            if in_word:
                words.append(word)
            word, in_word = "", False
        else:
            word += c
            in_word = True
        i += 1
    if quote:
        fail(f"an unclosed quote in {line!r}")
    if in_word:
        words.append(word)
    return words


def expand(words, env):
    """systemd's substitution: a word `$VAR` becomes the value split at
    white space (zero or more words), `${VAR}` anywhere is the value,
    `$$` is `$`; an unset variable is empty. `%%` is `%`; other
    specifiers are not handled (and fail)."""
    out = []
    for n, w in enumerate(words):
        if re.search(r"%[^%]", w.replace("%%", "")):
            fail(f"a specifier this script does not expand in {w!r}")
        w = w.replace("%%", "%")
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", w)
        if m and n > 0:
            out.extend(env.get(m.group(1), "").split())
            continue
        w = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), w)
        out.append(w.replace("$$", "$"))
    return out


def service(unit_path):
    """(argv, environment, settings) of the unit's service."""
    with open(unit_path, encoding="utf-8") as f:
        svc = parse_unit(f.read()).get("Service", [])
    settings = {}
    for key, value in svc:
        if key in NOT_APPLIED or key in NO_EFFECT:
            continue
        if key not in APPLIED:
            fail(f"{unit_path}: {key}= is a directive this script does not know how systemd applies")
        if key in ("EnvironmentFile", "CapabilityBoundingSet", "AmbientCapabilities"):
            settings.setdefault(key, []).append(value)
        elif key in settings:
            fail(f"{unit_path}: {key}= given twice")
        else:
            settings[key] = value
    if settings.get("Type", "simple") != "simple":
        fail(f"Type={settings['Type']}: only simple services are started here")
    env = {}
    for spec in settings.get("EnvironmentFile", []):
        optional = spec.startswith("-")
        path = spec[1:] if optional else spec
        try:
            with open(path, encoding="utf-8") as f:
                env.update(parse_env_file(f.read()))
        except FileNotFoundError:
            if not optional:
                fail(f"the EnvironmentFile {path} does not exist")
    cmd = settings.get("ExecStart") or fail("no ExecStart=")
    while cmd[:1] in ("-", "@"):
        if cmd[0] == "@":
            fail("ExecStart=@ (argv[0] given apart) is not handled")
        cmd = cmd[1:]
    if cmd[:1] in (":", "+", "!"):
        fail(f"the ExecStart= prefix {cmd[0]!r} is not handled")
    argv = expand(split_words(cmd), env)
    if not argv or not argv[0].startswith("/"):
        fail(f"ExecStart= does not start with an absolute path: {argv}")
    return argv, env, settings


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("show", "exec"):
        fail("usage: unit_exec.py show|exec UNIT")
    argv, env, settings = service(sys.argv[2])
    if sys.argv[1] == "show":
        print("\n".join(argv))
        return
    user = settings.get("User", "root")
    pw = pwd.getpwnam(user)
    group = settings.get("Group") or grp.getgrgid(pw.pw_gid).gr_name
    proc_env = {
        "PATH": DEFAULT_PATH,
        "USER": pw.pw_name,
        "LOGNAME": pw.pw_name,
        "HOME": pw.pw_dir,
        "SHELL": pw.pw_shell,
        "INVOCATION_ID": os.urandom(16).hex(),
    }
    proc_env.update(env)
    setpriv = ["setpriv", f"--reuid={user}", f"--regid={group}", "--init-groups"]
    if settings.get("NoNewPrivileges", "no") in ("yes", "true", "1", "on"):
        setpriv.append("--no-new-privs")
    if settings.get("CapabilityBoundingSet") == [""]:
        setpriv.append("--bounding-set=-all")
    if settings.get("AmbientCapabilities", [""]) == [""]:
        setpriv.append("--inh-caps=-all")
    if "UMask" in settings:
        os.umask(int(settings["UMask"], 8))
    os.chdir("/")
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    print("unit_exec.py: " + json.dumps({"user": user, "group": group, "argv": argv}), file=sys.stderr, flush=True)
    os.execvpe("setpriv", setpriv + ["--"] + argv, proc_env)


if __name__ == "__main__":
    main()
