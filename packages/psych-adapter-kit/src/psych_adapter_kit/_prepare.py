"""The first thing a sandboxed program's process runs, before the program itself (stdlib only).

It runs as ``python -I -S -B _prepare.py CONFIG`` (`python_command`): started by
`Supervisor.start`, or exec'd by a backend's own supervisor in a process it forked. It:

1. joins the cgroups CONFIG lists, and verifies in ``/proc/self/cgroup`` that it is in them;
2. sets CONFIG's rlimits;
3. switches to CONFIG's user (``[uid, gid]``, no supplementary groups) when one is given;
4. reports all of it, with what the kernel says of this process (real and effective uid, the
   effective capabilities, no-new-privileges), as one JSON line on the status pipe:
   ``{"event": "prepared", ...}``;
5. waits for one byte on the go pipe, and execs CONFIG's argv (looked up on PATH) when it is
   ``g``; exits 125 when it is anything else or the pipe closes.

A step that fails is reported, and the next ones still run: the parent grades from what was
reported, and decides whether the program may start. CONFIG (JSON) holds ``status_fd``,
``go_fd``, ``argv``, and optionally ``rlimits`` (``{"RLIMIT_CPU": [soft, hard], ...}``),
``user``, ``cgroups`` (``[{"key", "procs", "controller", "expect"}]``: write our pid to
``procs``, then expect ``/proc/self/cgroup`` to show ``expect`` for ``controller``, ``""`` on v2)
and ``program_reports`` (true: the program inherits the status pipe, to report on it too).
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any


def _report(fd: int, event: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(event) + "\n").encode())


def _membership() -> dict[str, str]:
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup") as lines:
        for line in lines:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def _join_cgroups(joins: list[dict[str, str]]) -> dict[str, str]:
    outcome: dict[str, str] = {}
    for join in joins:
        key = join["key"]
        try:
            with open(join["procs"], "w") as procs:
                procs.write(str(os.getpid()))
            seen = _membership().get(join["controller"])
        except OSError as exc:
            outcome[key] = f"could not join {join['procs']}: {exc.strerror or exc}"
            continue
        if seen == join["expect"]:
            outcome[key] = "ok"
        else:
            outcome[key] = f"not placed: /proc/self/cgroup shows {seen!r}, not {join['expect']!r}"
    return outcome


def _set_rlimits(rlimits: dict[str, list[int]]) -> dict[str, str]:
    outcome: dict[str, str] = {}
    for name, (soft, hard) in rlimits.items():
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
            outcome[name] = "ok"
        except (ValueError, OSError, AttributeError) as exc:
            outcome[name] = f"failed: {exc}"
    return outcome


def _switch_user(user: list[int] | None) -> str | None:
    if user is None:
        return None
    uid, gid = user
    try:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    except OSError as exc:
        return f"could not switch to uid {uid}: {exc.strerror or exc}"
    return None


def _status_fields() -> dict[str, str]:
    fields: dict[str, str] = {}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:  # no /proc (macOS): nothing is known, and the parent grades so
        pass
    return fields


def main() -> None:
    config = json.loads(sys.argv[1])
    status_fd: int = config["status_fd"]
    go_fd: int = config["go_fd"]
    cgroups = _join_cgroups(config.get("cgroups") or [])
    rlimits = _set_rlimits(config.get("rlimits") or {})
    user_error = _switch_user(config.get("user"))
    fields = _status_fields()
    _report(
        status_fd,
        {
            "event": "prepared",
            "cgroups": cgroups,
            "rlimits": rlimits,
            "user_error": user_error,
            "uid": os.getuid(),
            "euid": os.geteuid(),
            "cap_eff": fields.get("CapEff"),
            "no_new_privs": fields.get("NoNewPrivs") == "1",
        },
    )
    # The program inherits the status pipe only when it reports on it too (bubblewrap's
    # --json-status-fd); otherwise the pipe's end means that the supervisor is gone.
    if not config.get("program_reports"):
        os.close(status_fd)
    go = os.read(go_fd, 1)
    os.close(go_fd)
    if go != b"g":
        os._exit(125)
    argv: list[str] = config["argv"]
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"psych sandbox: cannot run {argv[0]!r}: {exc.strerror}\n".encode())
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


if __name__ == "__main__":
    main()
