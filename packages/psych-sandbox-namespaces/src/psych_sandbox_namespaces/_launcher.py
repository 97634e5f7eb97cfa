"""The supervisor `NamespaceSandbox` starts in place of bubblewrap (stdlib only).

It runs as ``python -I -S -B _launcher.py CONFIG`` in a new session, and:

1. joins the execution's cgroups and verifies, in ``/proc/self/cgroup``, that it is in them;
2. sets the rlimits (CPU per process, file size, no core files, and the fallbacks for limits
   whose cgroup failed);
3. when it is root and the sandbox runs the program as another user, switches to that user
   (bubblewrap then builds an unprivileged user namespace);
4. reports all of it on the status pipe, waits for ``g`` on the go pipe, and execs bubblewrap,
   which writes its own JSON status (namespaces made, exit code) on the same pipe.
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


def main() -> None:
    config = json.loads(sys.argv[1])
    status_fd: int = config["status_fd"]
    go_fd: int = config["go_fd"]
    cgroups: dict[str, str] = {}
    for join in config["cgroups"]:
        key = join["key"]
        try:
            with open(join["procs"], "w") as procs:
                procs.write(str(os.getpid()))
            seen = _membership().get(join["controller"])
            if seen == join["expect"]:
                cgroups[key] = "ok"
            else:
                cgroups[key] = (
                    f"not placed: /proc/self/cgroup shows {seen!r}, not {join['expect']!r}"
                )
        except OSError as exc:
            cgroups[key] = f"could not join {join['procs']}: {exc.strerror or exc}"
    rlimits: dict[str, str] = {}
    for name, (soft, hard) in config["rlimits"].items():
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
            rlimits[name] = "ok"
        except (ValueError, OSError, AttributeError) as exc:
            rlimits[name] = f"failed: {exc}"
    user_error = None
    if config["user"] is not None:
        uid, gid = config["user"]
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        except OSError as exc:
            user_error = f"could not switch to uid {uid}: {exc.strerror or exc}"
    _report(
        status_fd,
        {
            "event": "launcher",
            "cgroups": cgroups,
            "rlimits": rlimits,
            "user_error": user_error,
            "uid": os.getuid(),
            "euid": os.geteuid(),
        },
    )
    go = os.read(go_fd, 1)
    os.close(go_fd)
    if go != b"g":
        os._exit(125)
    argv = config["argv"]
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
