"""`NamespaceSandbox`: bubblewrap namespaces, a seccomp filter and cgroup limits (level kernel)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from psych_core import (
    GUARANTEES,
    ExecRequest,
    ExecResult,
    Guarantee,
    SandboxRefused,
    SandboxUnavailable,
    level_reached,
    withhold_unmet,
)
from psych_sandbox_namespaces import _cgroups, _seccomp
from psych_sandbox_namespaces._supervise import Execution, StatusReader, feed

_LAUNCHER: Final = Path(__file__).with_name("_launcher.py")
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
_INJECTABLE: Final = {"memory_limited": "memory", "process_count_limited": "pids"}


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
        inject_setup_failure: for tests only: ``memory_limited`` or ``process_count_limited``
            makes that cgroup limit really fail to set at run time, to exercise the grading
            and the withholding of output.
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
        inject_setup_failure: Guarantee | None = None,
    ) -> None:
        if inject_setup_failure is not None and inject_setup_failure not in _INJECTABLE:
            raise ValueError(
                f"NamespaceSandbox can inject a setup failure only for {sorted(_INJECTABLE)}, "
                f"not {inject_setup_failure!r}"
            )
        self._bwrap = bwrap or shutil.which("bwrap")
        self._read_paths = tuple(read_paths)
        self._run_as = run_as or _NOBODY
        self._cgroup_root = Path(cgroup_root) if cgroup_root is not None else None
        self._scratch_root = os.fspath(scratch_root) if scratch_root is not None else None
        self._python = python or sys.executable
        self._fault = inject_setup_failure

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
        assert self._bwrap is not None
        userns = await asyncio.to_thread(_userns_works, self._bwrap, self._host_user())
        name = f"psych-{secrets.token_hex(6)}"
        scratch = await asyncio.to_thread(self._make_scratch, request, userns)
        plan = await asyncio.to_thread(
            _cgroups.plan,
            name,
            memory_bytes=request.limits.memory_bytes,
            processes=request.limits.processes,
            root=self._cgroup_root,
            sabotage=_INJECTABLE.get(self._fault or ""),
        )
        try:
            execution = await self._execute(request, scratch, plan, userns)
        finally:
            await asyncio.to_thread(plan.remove)
            await asyncio.to_thread(shutil.rmtree, scratch, True)
        result = ExecResult(
            backend=self.name,
            exit_code=execution.exit_code,
            signal=execution.signal,
            stdout=bytes(execution.stdout),
            stderr=bytes(execution.stderr),
            stdout_truncated=execution.stdout_truncated,
            stderr_truncated=execution.stderr_truncated,
            grades=execution.grades,
            level=level_reached(execution.grades, request.network),
            reasons=execution.reasons,
            limit_hit=execution.limit_hit,
        )
        return withhold_unmet(request, result)

    def _host_user(self) -> tuple[int, int] | None:
        """Who runs bubblewrap: `run_as` for a root caller, the caller itself otherwise."""
        return self._run_as if os.geteuid() == 0 else None

    def _make_scratch(self, request: ExecRequest, userns: bool) -> str:
        scratch = tempfile.mkdtemp(prefix="psych-sandbox-", dir=self._scratch_root)
        base = Path(scratch)
        for rel, content in request.files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        (base / request.cwd).mkdir(parents=True, exist_ok=True)
        user = self._host_user()
        if user is not None and userns:
            for directory, dirs, files in os.walk(scratch):
                os.chown(directory, *user)
                for entry in (*dirs, *files):
                    os.chown(os.path.join(directory, entry), *user, follow_symlinks=False)
        return scratch

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
        self, request: ExecRequest, scratch: str, plan: _cgroups.CgroupPlan, userns: bool
    ) -> Execution:
        execution = Execution()
        status_r, status_w = os.pipe()
        go_r, go_w = os.pipe()
        seccomp_r, seccomp_w = os.pipe()
        os.write(seccomp_w, _seccomp.compile_filter())
        os.close(seccomp_w)
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
        config = {
            "status_fd": status_w,
            "go_fd": go_r,
            "cgroups": joins,
            "rlimits": self._rlimits(request, plan),
            "user": list(self._run_as) if os.geteuid() == 0 and userns else None,
            "argv": self._bwrap_argv(request, scratch, userns, seccomp_r, status_w),
        }
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": _SCRATCH,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            **request.env,
        }
        try:
            proc = await asyncio.create_subprocess_exec(
                self._python,
                "-I",
                "-S",
                "-B",
                str(_LAUNCHER),
                json.dumps(config),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=scratch,
                env=env,
                start_new_session=True,
                pass_fds=(status_w, go_r, seccomp_r),
            )
        except OSError as exc:
            for fd in (status_r, status_w, go_r, go_w, seccomp_r):
                os.close(fd)
            raise SandboxUnavailable(
                self.name, f"could not start the supervisor with {self._python}: {exc}"
            ) from exc
        for fd in (status_w, go_r, seccomp_r):
            os.close(fd)
        status = StatusReader(status_r)
        try:
            await self._supervise(request, execution, proc, status, go_w, plan, userns)
        finally:
            status.close()
            os.close(go_w)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        return execution

    async def _supervise(
        self,
        request: ExecRequest,
        execution: Execution,
        proc: asyncio.subprocess.Process,
        status: StatusReader,
        go_w: int,
        plan: _cgroups.CgroupPlan,
        userns: bool,
    ) -> None:
        setup = await status.next_event(timeout=30.0)
        if setup is None:
            raise SandboxUnavailable(self.name, "the supervisor died during setup")
        self._grade_setup(request, execution, setup, plan, userns)
        # Grades the namespaces will earn once bubblewrap confirms them; provisional until then,
        # so that a shortfall known now stops the program before it starts.
        self._grade_namespaces(request, execution, None)
        if request.unmet(execution.grades):
            os.write(go_w, b"n")
            await proc.wait()
            return
        os.write(go_w, b"g")
        assert proc.stdout is not None
        assert proc.stderr is not None
        assert proc.stdin is not None
        cap = request.limits.output_bytes
        readers = [
            asyncio.create_task(execution.read_output(proc.stdout, "stdout", cap)),
            asyncio.create_task(execution.read_output(proc.stderr, "stderr", cap)),
        ]
        feeder = asyncio.create_task(feed(proc.stdin, request.stdin))
        started = await status.next_event(timeout=30.0)
        if started is None or "child-pid" not in started:
            await asyncio.wait(readers, timeout=_STOP_GRACE)
            await proc.wait()
            detail = bytes(execution.stderr).decode("utf-8", "replace").strip()
            for task in (*readers, feeder):
                task.cancel()
            raise SandboxUnavailable(
                self.name, f"bubblewrap could not set up the sandbox: {detail or 'no message'}"
            )
        self._grade_namespaces(request, execution, started)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + request.limits.wall_seconds
        waiter = asyncio.create_task(proc.wait())
        stopper = asyncio.create_task(execution.stop.wait())
        done, _ = await asyncio.wait(
            {waiter, stopper},
            timeout=max(0.0, deadline - loop.time()),
            return_when=asyncio.FIRST_COMPLETED,
        )
        if waiter not in done:
            if stopper not in done:
                execution.limit_hit = "wall_time"
            # bubblewrap dies; its pid 1 in the namespace follows (--die-with-parent), and the
            # kernel kills every process left in a pid namespace whose init has died.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        stopper.cancel()
        returncode = await waiter
        finished = await status.next_event(timeout=1.0)
        code = finished.get("exit-code") if finished else None
        if code is None and returncode >= 0 and execution.limit_hit is None:
            code = returncode
        if isinstance(code, int):
            # bubblewrap reports a program killed by signal N as exit status 128 + N.
            if code > 128 and code - 128 < signal.NSIG:
                execution.signal = code - 128
            else:
                execution.exit_code = code
        elif execution.limit_hit is not None:
            execution.signal = signal.SIGKILL
        if execution.signal == signal.SIGXCPU and execution.limit_hit is None:
            execution.limit_hit = "cpu_time"
        if not await _namespace_gone(int(started["child-pid"]), started.get("pid-namespace")):
            execution.grade(
                "wall_time_limited",
                "not_enforced",
                "the sandbox's pid namespace was still alive after the execution ended",
            )
        _, pending = await asyncio.wait(readers, timeout=_STOP_GRACE)
        for task in (*pending, feeder):
            task.cancel()
        await asyncio.gather(*pending, feeder, return_exceptions=True)

    def _grade_setup(
        self,
        request: ExecRequest,
        execution: Execution,
        setup: dict[str, Any],
        plan: _cgroups.CgroupPlan,
        userns: bool,
    ) -> None:
        execution.grade("output_limited", "enforced")
        cgroups: dict[str, str] = setup.get("cgroups", {})
        rlimits: dict[str, str] = setup.get("rlimits", {})
        checks: tuple[tuple[Guarantee, str, int | None], ...] = (
            ("memory_limited", "memory", request.limits.memory_bytes),
            ("process_count_limited", "pids", request.limits.processes),
        )
        for guarantee, key, value in checks:
            if value is None:
                execution.grade(guarantee, "not_enforced", "the request sets no limit for it")
            elif cgroups.get(key) == "ok":
                execution.grade(guarantee, "enforced")
            else:
                problem = plan.problems.get(key) or cgroups.get(key) or "not attempted"
                fallback = (
                    "RLIMIT_AS (per process)" if key == "memory" else "RLIMIT_NPROC (per user)"
                )
                execution.grade(
                    guarantee,
                    "not_enforced",
                    f"the {key} cgroup could not be set up ({problem}); fell back to {fallback}",
                )
        if request.limits.cpu_seconds is None:
            execution.grade("cpu_time_limited", "not_enforced", "the request sets no cpu_seconds")
        elif rlimits.get("RLIMIT_CPU") == "ok":
            execution.grade("cpu_time_limited", "enforced")
        else:
            execution.grade(
                "cpu_time_limited", "not_enforced", f"RLIMIT_CPU: {rlimits.get('RLIMIT_CPU')}"
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
        if problems:
            execution.grade("unprivileged", "not_enforced", "; ".join(problems))
        else:
            # bubblewrap drops every capability, sets no-new-privileges and loads the seccomp
            # filter before it execs the program, and aborts without running it when any fails.
            execution.grade("unprivileged", "enforced")

    def _grade_namespaces(
        self, request: ExecRequest, execution: Execution, started: dict[str, Any] | None
    ) -> None:
        made = set()
        if started is not None:
            for key, kind in _NAMESPACES.items():
                ours = _own_namespace(kind)
                if key in started and ours is not None and f"{kind}:[{started[key]}]" != ours:
                    made.add(kind)

        def grade(guarantee: Guarantee, needs: set[str], what: str) -> None:
            if started is None or needs <= made:
                execution.grade(guarantee, "enforced")
            else:
                missing = ", ".join(sorted(needs - made))
                execution.grade(
                    guarantee, "not_enforced", f"bubblewrap did not report new {missing} for {what}"
                )

        grade("wall_time_limited", {"pid"}, "the wall-time kill")
        grade("reads_confined", {"mnt"}, "the read-only view")
        grade("writes_confined", {"mnt"}, "the read-only view")
        grade("process_isolated", {"pid", "ipc"}, "process isolation")
        if request.network == "none":
            grade("network_isolated", {"net"}, "network isolation")
        else:
            execution.grade("network_isolated", "not_enforced", "the request asked for egress")
        for guarantee in GUARANTEES:
            if guarantee not in execution.grades:
                execution.grade(guarantee, "unknown", "not graded")


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
