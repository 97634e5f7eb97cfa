"""The supervisor `SubprocessSandbox` starts in place of the program (stdlib only).

It runs as ``python -I -S -B _subprocess_launcher.py CONFIG`` in a new session, and:

1. makes itself a *child subreaper*, so every process the program leaves behind (even one that
   called ``setsid`` to leave the process group) is re-parented to it instead of to init;
2. forks the program's process, which sets the rlimits, drops to the configured user, sets
   no-new-privileges, reports what it set up on the status pipe, and waits on the go pipe;
3. execs the program only when the parent, having graded the setup, writes ``g``;
4. when the program's process ends (or on SIGTERM, the parent's wall-time stop), kills every
   process left under it, until none is, and reports the exit status and whether the cleanup
   finished on the status pipe.

Every step reports what it actually did, so the parent grades from facts, not intentions.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
import time
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
CLEANUP_SECONDS = 5.0


class _Stop(Exception):
    pass


def _prctl(option: int, arg: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):  # not Linux: no prctl
        return False


def _report(fd: int, event: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(event) + "\n").encode())


def _status_fields() -> dict[str, str]:
    fields: dict[str, str] = {}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        pass
    return fields


def _child(config: dict[str, Any], status_fd: int, go_fd: int) -> None:
    setup: dict[str, str] = {}
    for name, (soft, hard) in config["rlimits"].items():
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
            setup[name] = "ok"
        except (ValueError, OSError, AttributeError) as exc:
            setup[name] = f"failed: {exc}"
    user_error = None
    if config["user"] is not None:
        uid, gid = config["user"]
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        except OSError as exc:
            user_error = f"could not switch to uid {uid}: {exc}"
    no_new_privs = _prctl(PR_SET_NO_NEW_PRIVS, 1)
    fields = _status_fields()
    _report(
        status_fd,
        {
            "event": "child",
            "rlimits": setup,
            "user_error": user_error,
            "uid": os.getuid(),
            "euid": os.geteuid(),
            "cap_eff": fields.get("CapEff"),
            "no_new_privs": no_new_privs and fields.get("NoNewPrivs") == "1",
        },
    )
    os.close(status_fd)
    go = os.read(go_fd, 1)
    os.close(go_fd)
    if go != b"g":
        os._exit(125)
    argv = config["argv"]
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"psych sandbox: cannot run {argv[0]!r}: {exc.strerror}\n".encode())
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _children(me: int) -> list[int]:
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:  # no /proc (macOS): nothing can be found, and the cleanup says so
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
        rest = text[text.rfind(")") + 2 :].split()
        if len(rest) > 1 and int(rest[1]) == me:
            found.append(int(entry))
    return found


def _reap(main: int, main_status: list[int]) -> bool:
    """Reap every dead child without blocking; False when no child is left."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == main and not main_status:
            main_status.append(status)


def _kill_all(main: int, main_status: list[int]) -> tuple[bool, int]:
    """SIGKILL every process under this one until none is left. Returns (clean, killed)."""
    me = os.getpid()
    killed: set[int] = set()
    deadline = time.monotonic() + CLEANUP_SECONDS
    while time.monotonic() < deadline:
        kids = _children(me)
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        alive = _reap(main, main_status)
        if not kids and not alive:
            return True, len(killed - {main})
        time.sleep(0.005)
    return False, len(killed - {main})


def main() -> None:
    config = json.loads(sys.argv[1])
    status_fd: int = config["status_fd"]
    go_fd: int = config["go_fd"]
    subreaper = _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _report(status_fd, {"event": "launcher", "subreaper": subreaper, "pid": os.getpid()})

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    main_pid = os.fork()
    if main_pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            _child(config, status_fd, go_fd)
        finally:
            os._exit(126)
    os.close(go_fd)
    # The launcher's own descriptors to the program's stdio are closed so that only the
    # program (and what it starts) holds them: EOF then means they are all gone.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)

    main_status: list[int] = []
    stopped = False
    try:
        while not main_status:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == main_pid:
                main_status.append(status)
    except _Stop:
        stopped = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    clean, survivors = _kill_all(main_pid, main_status)
    exit_code = signum = None
    if main_status:
        status = main_status[0]
        if os.WIFEXITED(status):
            exit_code = os.WEXITSTATUS(status)
        elif os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
    _report(
        status_fd,
        {
            "event": "exit",
            "exit_code": exit_code,
            "signal": signum,
            "stopped": stopped,
            "clean": clean and bool(main_status),
            "survivors": survivors,
        },
    )


if __name__ == "__main__":
    main()
