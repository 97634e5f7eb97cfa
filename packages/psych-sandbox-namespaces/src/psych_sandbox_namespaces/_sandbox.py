"""`NamespaceSandbox`: bubblewrap namespaces, a seccomp filter and cgroup limits (level kernel)."""

from __future__ import annotations

import asyncio
import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from psych_adapter_kit import (
    PREPARE_SCRIPT,
    SETUP_FAULTS,
    ProgramStreams,
    Supervisor,
    scratch_folder,
)
from psych_core import (
    ExecRequest,
    ExecResult,
    ExecTally,
    Guarantee,
    SandboxRefused,
    SandboxUnavailable,
)
from psych_sandbox_namespaces import _cgroups, _seccomp

_NOBODY: Final = (65534, 65534)
_INSIDE_UID: Final = 1000
_SCRATCH: Final = "/scratch"
_STOP_GRACE: Final = 5.0

DEFAULT_READ_PATHS: Final = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/ssl/certs",
)
"""What the program sees of the host, read-only: programs, libraries and the few files of /etc
the dynamic linker and TLS need. Never /root, /home, /etc/shadow or /tmp."""

EGRESS_READ_PATHS: Final = ("/etc/resolv.conf", "/etc/hosts")
"""Added when a request asks for ``egress``, so names resolve."""

_NAMESPACES: Final = {
    "pid-namespace": "pid",
    "net-namespace": "net",
    "mnt-namespace": "mnt",
    "ipc-namespace": "ipc",
    "uts-namespace": "uts",
    "user-namespace": "user",
}
# What a test can make really fail (psych_runtime.testing.sandbox_faults), by the cgroup
# controller whose limit is then written as a value the kernel refuses.
_CAN_FAIL: Final[dict[Guarantee, str]] = {
    "memory_limited": "memory",
    "process_count_limited": "pids",
}


def _own_namespace(kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/self/ns/{kind}")
    except OSError:
        return None


class NamespaceSandbox:
    """Runs a program in fresh Linux namespaces with bubblewrap: level ``kernel``.

    Per execution it sets up: user (when the host allows unprivileged user namespaces), pid,
    net (unless egress is asked for), ipc, uts, mount and cgroup namespaces; a minimal root of
    read-only binds (`read_paths`) with a private /proc, /dev and /tmp and a writable scratch
    directory at ``/scratch``; all capabilities dropped, a new session, no new privileges, the
    seccomp filter of `psych_sandbox_namespaces.SECCOMP_DENIED`; a memory and a process-count
    cgroup of its own (v1 or v2), falling back to rlimits where cgroups are not writable; an
    RLIMIT_CPU per process; a wall-time kill of the whole pid namespace.

    Args:
        bwrap: the bubblewrap binary (found on PATH by default).
        read_paths: host paths bound read-only at the same place (missing ones are skipped).
        run_as: ``(uid, gid)`` on the host that runs bubblewrap when the caller is root:
            ``nobody`` by default, so that the sandbox's user namespace maps to an unprivileged
            host user. Ignored for a non-root caller, who runs it as itself.
        cgroup_root: create the per-execution cgroups under this directory (a delegated
            subtree) instead of under this process's own cgroups.
        scratch_root: where per-execution scratch directories are made on the host.
        python: the interpreter that runs the supervisor (this one by default).
    """

    def __init__(
        self,
        *,
        bwrap: str | None = None,
        read_paths: Sequence[str] = DEFAULT_READ_PATHS,
        run_as: tuple[int, int] | None = None,
        cgroup_root: str | os.PathLike[str] | None = None,
        scratch_root: str | os.PathLike[str] | None = None,
        python: str | None = None,
    ) -> None:
        self._bwrap = bwrap or shutil.which("bwrap")
        self._read_paths = tuple(read_paths)
        self._run_as = run_as or _NOBODY
        self._cgroup_root = Path(cgroup_root) if cgroup_root is not None else None
        self._scratch_root = os.fspath(scratch_root) if scratch_root is not None else None
        self._python = python or sys.executable

    @property
    def name(self) -> str:
        """``"namespaces"``."""
        return "namespaces"

    # ------------------------------------------------------------------ refusing

    def _unavailable(self) -> str | None:
        if not sys.platform.startswith("linux"):
            return f"namespaces exist on Linux only, and this is {sys.platform}"
        if self._bwrap is None or not os.access(self._bwrap, os.X_OK):
            return (
                "bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: "
                "apt-get install bubblewrap; or run scripts/sandbox-host.sh start)"
            )
        if _seccomp.supported_machine() is None:
            return "the seccomp filter has no system-call table for this machine"
        return None

    def check(self, request: ExecRequest) -> None:
        """Raise `SandboxRefused` when this host cannot give `request` what it requires.

        On macOS, Windows, or Linux without bubblewrap, every request that requires the
        ``kernel`` level or an isolation guarantee is refused: never approximated.
        """
        problem = self._unavailable()
        if problem is not None:
            raise SandboxRefused(self.name, tuple(sorted(request.required)) or ("any",), problem)
        never: list[str] = []
        reasons: list[str] = []
        if "network_isolated" in request.required and request.network == "egress":
            never.append("network_isolated")
            reasons.append("the request asks for egress and network isolation at once")
        if "cpu_time_limited" in request.required and request.limits.cpu_seconds is None:
            never.append("cpu_time_limited")
            reasons.append("the request sets no cpu_seconds")
        if "memory_limited" in request.required and request.limits.memory_bytes is None:
            never.append("memory_limited")
            reasons.append("the request sets no memory_bytes")
        if "process_count_limited" in request.required and request.limits.processes is None:
            never.append("process_count_limited")
            reasons.append("the request sets no processes limit")
        if never:
            raise SandboxRefused(self.name, tuple(never), "; ".join(reasons))

    # ------------------------------------------------------------------ running

    async def run(self, request: ExecRequest) -> ExecResult:
        """Run `request` and grade it; see the class docstring and the `Sandbox` port."""
        if self._unavailable() is not None:
            self.check(request)  # refuses what needs isolation
            raise SandboxUnavailable(self.name, self._unavailable() or "")
        self.check(request)
        fault = SETUP_FAULTS.wanted(self.name, _CAN_FAIL)
        assert self._bwrap is not None
        userns = await asyncio.to_thread(_userns_works, self._bwrap, self._host_user())
        owner = self._host_user() if userns else None
        tally = ExecTally(self.name)
        async with scratch_folder(request, root=self._scratch_root, owner=owner) as scratch:
            plan = await asyncio.to_thread(
                _cgroups.plan,
                f"psych-{secrets.token_hex(6)}",
                memory_bytes=request.limits.memory_bytes,
                processes=request.limits.processes,
                root=self._cgroup_root,
                sabotage=_CAN_FAIL[fault] if fault is not None else None,
            )
            try:
                await self._execute(request, tally, scratch, plan, userns)
            finally:
                await asyncio.to_thread(plan.remove)
        return tally.result(request)

    def _host_user(self) -> tuple[int, int] | None:
        """Who runs bubblewrap: `run_as` for a root caller, the caller itself otherwise."""
        return self._run_as if os.geteuid() == 0 else None

    def _bwrap_argv(
        self, request: ExecRequest, scratch: str, userns: bool, seccomp_fd: int, status_fd: int
    ) -> list[str]:
        assert self._bwrap is not None
        argv = [self._bwrap]
        if userns:
            argv += ["--unshare-user", "--uid", str(_INSIDE_UID), "--gid", str(_INSIDE_UID)]
        argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if request.network == "none":
            argv += ["--unshare-net"]
        argv += ["--hostname", "psych-sandbox", "--die-with-parent", "--new-session"]
        argv += ["--cap-drop", "ALL", "--seccomp", str(seccomp_fd)]
        argv += ["--json-status-fd", str(status_fd)]
        paths = self._read_paths + (EGRESS_READ_PATHS if request.network == "egress" else ())
        for path in paths:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.exists(path):
                argv += ["--ro-bind", path, path]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        argv += ["--bind", scratch, _SCRATCH, "--remount-ro", "/"]
        argv += ["--chdir", os.path.normpath(os.path.join(_SCRATCH, request.cwd))]
        argv += ["--", *request.argv]
        return argv

    def _rlimits(self, request: ExecRequest, plan: _cgroups.CgroupPlan) -> dict[str, list[int]]:
        limits = request.limits
        rlimits: dict[str, list[int]] = {"RLIMIT_CORE": [0, 0]}
        if limits.cpu_seconds is not None:
            rlimits["RLIMIT_CPU"] = [limits.cpu_seconds, limits.cpu_seconds + 1]
        if limits.file_bytes is not None:
            rlimits["RLIMIT_FSIZE"] = [limits.file_bytes, limits.file_bytes]
        # Fallbacks where the cgroup failed: weaker (per process, per user), graded so.
        if limits.memory_bytes is not None and plan.memory_path is None:
            rlimits["RLIMIT_AS"] = [limits.memory_bytes, limits.memory_bytes]
        if limits.processes is not None and plan.pids_path is None:
            rlimits["RLIMIT_NPROC"] = [limits.processes, limits.processes]
        return rlimits

    async def _execute(
        self,
        request: ExecRequest,
        tally: ExecTally,
        scratch: str,
        plan: _cgroups.CgroupPlan,
        userns: bool,
    ) -> None:
        joins = []
        for key, path, directory in (
            ("memory", plan.memory_path, plan.memory_dir),
            ("pids", plan.pids_path, plan.pids_dir),
        ):
            if path is not None and directory is not None:
                controller = key if plan.version == "v1" else ""
                procs = directory / "cgroup.procs"
                joins.append(
                    {"key": key, "procs": str(procs), "expect": path, "controller": controller}
                )
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": _SCRATCH,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            **request.env,
        }
        async with Supervisor(self.name, python=self._python) as supervisor:
            seccomp = _seccomp_pipe()
            config = {
                "cgroups": joins,
                "rlimits": self._rlimits(request, plan),
                "user": list(self._run_as) if os.geteuid() == 0 and userns else None,
                "argv": self._bwrap_argv(request, scratch, userns, seccomp, supervisor.status_fd),
                "program_reports": True,
            }
            await supervisor.start(
                PREPARE_SCRIPT, config, cwd=scratch, env=env, pass_fds=(seccomp,)
            )
            await self._supervise(request, tally, supervisor, plan, userns)

    async def _supervise(
        self,
        request: ExecRequest,
        tally: ExecTally,
        supervisor: Supervisor,
        plan: _cgroups.CgroupPlan,
        userns: bool,
    ) -> None:
        setup = await supervisor.next_event(timeout=30.0)
        if setup is None or setup.get("event") != "prepared":
            raise SandboxUnavailable(self.name, "the supervisor died during setup")
        self._grade_setup(request, tally, setup, plan, userns)
        # Grades the namespaces will earn once bubblewrap confirms them; provisional until then,
        # so that a shortfall known now stops the program before it starts.
        self._grade_namespaces(request, tally, None)
        if not supervisor.answer(request, tally):
            await supervisor.wait()
            return
        async with ProgramStreams(supervisor.process, tally, request) as streams:
            started = await supervisor.next_event(timeout=30.0)
            if started is None or "child-pid" not in started:
                await streams.drain(_STOP_GRACE)
                await supervisor.wait()
                detail = bytes(tally.stderr).decode("utf-8", "replace").strip()
                raise SandboxUnavailable(
                    self.name, f"bubblewrap could not set up the sandbox: {detail or 'no message'}"
                )
            self._grade_namespaces(request, tally, started)
            waiter = asyncio.create_task(supervisor.wait())
            stopped_by = await streams.wait(waiter, request.limits.wall_seconds)
            if stopped_by is not None:
                tally.hit(stopped_by)
                # bubblewrap dies; its pid 1 in the namespace follows (--die-with-parent), and
                # the kernel kills every process left in a pid namespace whose init has died.
                supervisor.kill()
            returncode = await waiter
            finished = await supervisor.next_event(timeout=1.0)
            code = finished.get("exit-code") if finished else None
            if code is None and returncode >= 0 and tally.limit_hit is None:
                code = returncode
            if isinstance(code, int):
                tally.ended_with_status(code)
            elif tally.limit_hit is not None:
                tally.signal = signal.SIGKILL
            if tally.signal == signal.SIGXCPU:
                tally.hit("cpu_time")
            if not await _namespace_gone(int(started["child-pid"]), started.get("pid-namespace")):
                tally.grade(
                    "wall_time_limited",
                    "not_enforced",
                    "the sandbox's pid namespace was still alive after the execution ended",
                )
            await streams.drain(_STOP_GRACE)

    def _grade_setup(
        self,
        request: ExecRequest,
        tally: ExecTally,
        setup: dict[str, Any],
        plan: _cgroups.CgroupPlan,
        userns: bool,
    ) -> None:
        tally.grade("output_limited", "enforced")
        cgroups: dict[str, str] = setup.get("cgroups", {})
        checks: tuple[tuple[Guarantee, str, int | None, str], ...] = (
            ("memory_limited", "memory", request.limits.memory_bytes, "RLIMIT_AS (per process)"),
            ("process_count_limited", "pids", request.limits.processes, "RLIMIT_NPROC (per user)"),
        )
        for guarantee, key, value, fallback in checks:
            problem = plan.problems.get(key) or cgroups.get(key) or "not attempted"
            tally.grade_limit(
                guarantee,
                value,
                None
                if cgroups.get(key) == "ok"
                else f"the {key} cgroup could not be set up ({problem}); fell back to {fallback}",
            )
        cpu = setup.get("rlimits", {}).get("RLIMIT_CPU")
        tally.grade_limit(
            "cpu_time_limited",
            request.limits.cpu_seconds,
            None if cpu == "ok" else f"RLIMIT_CPU: {cpu}",
        )
        problems = []
        if setup.get("user_error"):
            problems.append(str(setup["user_error"]))
        if setup.get("euid") == 0 and not userns:
            problems.append(
                "unprivileged user namespaces are not available here, so the program runs as "
                "the host's root (without capabilities)"
            )
        elif setup.get("euid") == 0:
            problems.append("bubblewrap would run as root, so the user namespace maps to root")
        # Nothing else to check: bubblewrap drops every capability, sets no-new-privileges and
        # loads the seccomp filter before it execs the program, and aborts when any fails.
        tally.grade_checks("unprivileged", problems)

    def _grade_namespaces(
        self, request: ExecRequest, tally: ExecTally, started: dict[str, Any] | None
    ) -> None:
        made = set()
        if started is not None:
            for key, kind in _NAMESPACES.items():
                ours = _own_namespace(kind)
                if key in started and ours is not None and f"{kind}:[{started[key]}]" != ours:
                    made.add(kind)

        def grade(guarantee: Guarantee, needs: set[str], what: str) -> None:
            if started is None or needs <= made:
                tally.grade(guarantee, "enforced")
            else:
                missing = ", ".join(sorted(needs - made))
                tally.grade(
                    guarantee, "not_enforced", f"bubblewrap did not report new {missing} for {what}"
                )

        grade("wall_time_limited", {"pid"}, "the wall-time kill")
        grade("reads_confined", {"mnt"}, "the read-only view")
        grade("writes_confined", {"mnt"}, "the read-only view")
        grade("process_isolated", {"pid", "ipc"}, "process isolation")
        if request.network == "none":
            grade("network_isolated", {"net"}, "network isolation")
        else:
            tally.grade("network_isolated", "not_enforced", "the request asked for egress")
        tally.grade_rest("unknown", "not graded")


def _seccomp_pipe() -> int:
    """A pipe holding the compiled seccomp filter, for bubblewrap to read: its read end."""
    read, write = os.pipe()
    try:
        os.write(write, _seccomp.compile_filter())
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    return read


def _init_state(init_pid: int) -> tuple[str, str] | None:
    """The pid namespace and the state letter of process `init_pid`, or None when it is gone."""
    try:
        namespace = os.readlink(f"/proc/{init_pid}/ns/pid")
        with open(f"/proc/{init_pid}/stat") as stat:
            return namespace, stat.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


async def _namespace_gone(init_pid: int, pid_namespace: object) -> bool:
    """Whether the sandbox's pid namespace is gone: its init has exited (a zombie counts, as
    the kernel kills every process of the namespace before its init can exit)."""
    for _ in range(100):
        found = _init_state(init_pid)
        if found is None:
            return True
        namespace, state = found
        if pid_namespace is not None and namespace != f"pid:[{pid_namespace}]":
            return True  # the pid was reused by a process outside the sandbox
        if state in ("Z", "X"):
            return True
        await asyncio.sleep(0.02)
    return False


@functools.cache
def _userns_works(bwrap: str, user: tuple[int, int] | None) -> bool:
    """Whether bubblewrap can make an unprivileged user namespace here, as `user`."""
    try:
        done = subprocess.run(
            [bwrap, "--unshare-user", "--ro-bind", "/", "/", "true"],
            user=user[0] if user else None,
            group=user[1] if user else None,
            extra_groups=[] if user else None,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
