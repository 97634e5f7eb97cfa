"""The supervisor `SubprocessSandbox` starts in place of the program (stdlib only).

It runs as ``python -I -S -B _subprocess_launcher.py CONFIG`` in a new session, and:

1. makes itself a *child subreaper*, so every process the program leaves behind (even one that
   called ``setsid`` to leave the process group) is re-parented to it instead of to init, and
   sets no-new-privileges, which every process it starts inherits;
2. forks the program's process, which execs the adapter kit's prepare script (CONFIG's
   ``prepare``): it sets the rlimits, drops to the configured user, reports what it set up on
   the status pipe, waits on the go pipe, and execs the program when the parent, having graded
   the setup, writes ``g``;
3. when the program's process ends (or on SIGTERM, the parent's wall-time stop), kills every
   process left under it, until none is, and reports the exit status and whether the cleanup
   finished on the status pipe.

Every step reports what it actually did, so the parent grades from facts, not intentions.
"""

from __future__ import annotations

import ctypes
import json
import os
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
    # Not reported here: the prepared process reports whether it holds (and so the program).
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _report(status_fd, {"event": "launcher", "subreaper": subreaper, "pid": os.getpid()})

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    main_pid = os.fork()
    if main_pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            program = {**config["program"], "status_fd": status_fd, "go_fd": go_fd}
            os.execv(config["prepare"][0], [*config["prepare"], json.dumps(program)])
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
