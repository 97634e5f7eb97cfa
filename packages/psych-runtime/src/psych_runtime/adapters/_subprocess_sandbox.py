"""`SubprocessSandbox`: resource limits for a child process, and an honest word that it does not
isolate.

What it sets up, per execution: a supervisor process (``_subprocess_launcher.py``) in a new
session that is a child subreaper, so nothing the program starts outlives the execution; rlimits
in the program's process (CPU, address space, processes, file size, no core files); a switch to
an unprivileged user when the caller is root; no-new-privileges; a scratch directory as the
working directory; a scrubbed environment; stdout and stderr capped while they are read.

What it does not do: confine reads, writes, the network or the view of other processes. Those
grades are ``not_enforced``, and a request that requires them (or the ``kernel`` level) is
refused before anything runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from psych_core import (
    GUARANTEES,
    ExecRequest,
    ExecResult,
    Grade,
    Guarantee,
    LimitName,
    SandboxRefused,
    SandboxUnavailable,
    level_at_least,
    level_reached,
    withhold_unmet,
)

_LAUNCHER: Final = Path(__file__).with_name("_subprocess_launcher.py")
_NOBODY: Final = (65534, 65534)
_DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
_CHUNK: Final = 65536
# How long the supervisor gets to report its cleanup after it was told to stop.
_STOP_GRACE: Final = 6.0

_NOT_ISOLATED: Final = (
    "the subprocess backend does not isolate; use NamespaceSandbox or DockerSandbox"
)
_NEVER: Final[dict[Guarantee, str]] = {
    # RLIMIT_AS is still set, but it caps each process: forking multiplies it.
    "memory_limited": (
        "RLIMIT_AS caps each process at memory_bytes, not the execution: without a cgroup the "
        "processes together are not limited"
    ),
    # RLIMIT_NPROC is still set, but the kernel counts it against every process of the user,
    # in every session: it cannot bound this execution alone, and root ignores it entirely.
    "process_count_limited": (
        "RLIMIT_NPROC counts every process of the user, not of this execution (and root ignores it)"
    ),
    "reads_confined": _NOT_ISOLATED,
    "writes_confined": _NOT_ISOLATED,
    "network_isolated": _NOT_ISOLATED,
    "process_isolated": _NOT_ISOLATED,
}
_INJECTABLE: Final = frozenset({"cpu_time_limited", "wall_time_limited"})


@dataclass
class _Run:
    """What one execution set up and saw, filled in as it goes."""

    grades: dict[Guarantee, Grade] = field(default_factory=dict)
    reasons: dict[Guarantee, str] = field(default_factory=dict)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    limit_hit: LimitName | None = None
    exit_code: int | None = None
    signal: int | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def grade(self, guarantee: Guarantee, grade: Grade, reason: str | None = None) -> None:
        self.grades[guarantee] = grade
        if grade == "enforced":
            self.reasons.pop(guarantee, None)
        elif reason:
            self.reasons[guarantee] = reason


class SubprocessSandbox:
    """Runs a program as a child process under rlimits: level ``limited`` at best.

    Args:
        run_as: ``(uid, gid)`` the program runs as. By default a root caller runs it as
            ``nobody`` (65534), and any other caller as itself.
        scratch_root: where per-execution scratch directories are made (the system's temp
            directory by default).
        python: the interpreter that runs the supervisor (this one by default).
        inject_setup_failure: for tests only: make the setup of this guarantee
            (``cpu_time_limited`` or ``wall_time_limited``) really fail at run time, to exercise
            the detection and the withholding of output.
    """

    def __init__(
        self,
        *,
        run_as: tuple[int, int] | None = None,
        scratch_root: str | os.PathLike[str] | None = None,
        python: str | None = None,
        inject_setup_failure: Guarantee | None = None,
    ) -> None:
        if inject_setup_failure is not None and inject_setup_failure not in _INJECTABLE:
            raise ValueError(
                f"SubprocessSandbox can inject a setup failure only for {sorted(_INJECTABLE)}, "
                f"not {inject_setup_failure!r}"
            )
        root = os.name == "posix" and os.geteuid() == 0
        self._run_as = run_as if run_as is not None else (_NOBODY if root else None)
        self._scratch_root = os.fspath(scratch_root) if scratch_root is not None else None
        self._python = python or sys.executable
        self._fault = inject_setup_failure

    @property
    def name(self) -> str:
        """``"subprocess"``."""
        return "subprocess"

    def check(self, request: ExecRequest) -> None:
        """Raise `SandboxRefused` when `request` requires what this backend never enforces."""
        if os.name != "posix":
            raise SandboxRefused(
                self.name, tuple(sorted(request.required)), "it runs on POSIX systems only"
            )
        if not level_at_least("limited", request.require_level):
            raise SandboxRefused(
                self.name,
                (f"level:{request.require_level}",),
                "it reaches level 'limited' at most: it sets resource limits and does not "
                "isolate (NamespaceSandbox and DockerSandbox reach 'kernel')",
            )
        never = [g for g in GUARANTEES if g in request.required and g in _NEVER]
        if request.limits.cpu_seconds is None and "cpu_time_limited" in request.required:
            never.append("cpu_time_limited")
        if "unprivileged" in request.required and not self._drops_privileges():
            never.append("unprivileged")
        if never:
            reasons = {**_NEVER, "cpu_time_limited": "the request sets no cpu_seconds"}
            reasons["unprivileged"] = "it runs as root and was told not to switch user"
            raise SandboxRefused(
                self.name, tuple(never), "; ".join(f"{g}: {reasons[g]}" for g in never)
            )

    def _drops_privileges(self) -> bool:
        uid = self._run_as[0] if self._run_as is not None else os.geteuid()
        return uid != 0

    async def run(self, request: ExecRequest) -> ExecResult:
        """Run `request` and grade it; see the class docstring and the `Sandbox` port."""
        self.check(request)
        scratch = await asyncio.to_thread(self._make_scratch, request)
        try:
            run = await self._execute(request, scratch)
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, True)
        result = ExecResult(
            backend=self.name,
            exit_code=run.exit_code,
            signal=run.signal,
            stdout=bytes(run.stdout),
            stderr=bytes(run.stderr),
            stdout_truncated=run.stdout_truncated,
            stderr_truncated=run.stderr_truncated,
            grades=run.grades,
            level=level_reached(run.grades, request.network),
            reasons=run.reasons,
            limit_hit=run.limit_hit,
        )
        return withhold_unmet(request, result)

    # ------------------------------------------------------------------ setup

    def _make_scratch(self, request: ExecRequest) -> str:
        scratch = tempfile.mkdtemp(prefix="psych-sandbox-", dir=self._scratch_root)
        os.chmod(scratch, 0o700)
        base = Path(scratch)
        for rel, content in request.files.items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        (base / request.cwd).mkdir(parents=True, exist_ok=True)
        if self._run_as is not None and os.geteuid() == 0:
            uid, gid = self._run_as
            for directory, dirs, files in os.walk(scratch):
                os.chown(directory, uid, gid)
                for name in (*dirs, *files):
                    os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)
        return scratch

    def _rlimits(self, request: ExecRequest) -> dict[str, tuple[int, int]]:
        limits = request.limits
        rlimits = {"RLIMIT_CORE": (0, 0)}
        if limits.cpu_seconds is not None:
            # SIGXCPU at the soft limit, SIGKILL a second later for a program that catches it.
            rlimits["RLIMIT_CPU"] = (limits.cpu_seconds, limits.cpu_seconds + 1)
            if self._fault == "cpu_time_limited":
                rlimits["RLIMIT_CPU"] = (limits.cpu_seconds + 1, limits.cpu_seconds)
        if limits.memory_bytes is not None:
            rlimits["RLIMIT_AS"] = (limits.memory_bytes, limits.memory_bytes)
        if limits.processes is not None:
            rlimits["RLIMIT_NPROC"] = (limits.processes, limits.processes)
        if limits.file_bytes is not None:
            rlimits["RLIMIT_FSIZE"] = (limits.file_bytes, limits.file_bytes)
        return rlimits

    def _environment(self, request: ExecRequest, scratch: str) -> dict[str, str]:
        return {
            "PATH": _DEFAULT_PATH,
            "HOME": scratch,
            "TMPDIR": scratch,
            "LANG": "C.UTF-8",
            **request.env,
        }

    # ------------------------------------------------------------------ execution

    async def _execute(self, request: ExecRequest, scratch: str) -> _Run:
        run = _Run()
        run.grade("output_limited", "enforced")
        for guarantee, reason in _NEVER.items():
            run.grade(guarantee, "not_enforced", reason)
        status_r, status_w = os.pipe()
        go_r, go_w = os.pipe()
        config = {
            "status_fd": status_w,
            "go_fd": go_r,
            "rlimits": self._rlimits(request),
            "user": list(self._run_as) if self._run_as is not None else None,
            "argv": list(request.argv),
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
                cwd=os.path.join(scratch, request.cwd),
                env=self._environment(request, scratch),
                start_new_session=True,
                pass_fds=(status_w, go_r),
            )
        except OSError as exc:
            for fd in (status_r, status_w, go_r, go_w):
                os.close(fd)
            raise SandboxUnavailable(
                self.name, f"could not start the supervisor with {self._python}: {exc}"
            ) from exc
        os.close(status_w)
        os.close(go_r)
        status = _StatusReader(status_r)
        try:
            await self._supervise(request, run, proc, status, go_w)
        finally:
            status.close()
            os.close(go_w)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        return run

    async def _supervise(
        self,
        request: ExecRequest,
        run: _Run,
        proc: asyncio.subprocess.Process,
        status: _StatusReader,
        go_w: int,
    ) -> None:
        launcher = await status.next_event(timeout=30.0)
        child = await status.next_event(timeout=30.0)
        if launcher is None or child is None:
            raise SandboxUnavailable(
                self.name, "the supervisor died during setup (is /proc mounted? is Python intact?)"
            )
        self._grade_setup(request, run, launcher, child)
        unmet = request.unmet(run.grades)
        if unmet:
            # The shortfall is known before the program starts: it never runs.
            os.write(go_w, b"n")
            await status.next_event(timeout=_STOP_GRACE)
            return
        os.write(go_w, b"g")

        loop = asyncio.get_running_loop()
        assert proc.stdout is not None
        assert proc.stderr is not None
        assert proc.stdin is not None
        cap = request.limits.output_bytes
        readers = [
            asyncio.create_task(self._read(proc.stdout, run, "stdout", cap)),
            asyncio.create_task(self._read(proc.stderr, run, "stderr", cap)),
        ]
        feeder = asyncio.create_task(self._feed(proc.stdin, request.stdin))
        exit_event = asyncio.create_task(status.next_event(timeout=None))
        deadline = loop.time() + request.limits.wall_seconds
        stopper = asyncio.create_task(run.stop.wait())
        done, _ = await asyncio.wait(
            {exit_event, stopper},
            timeout=max(0.0, deadline - loop.time()),
            return_when=asyncio.FIRST_COMPLETED,
        )
        if exit_event not in done:
            if stopper not in done:
                run.limit_hit = "wall_time"
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(exit_event), _STOP_GRACE)
        stopper.cancel()
        report = exit_event.result() if exit_event.done() else None
        if not exit_event.done():
            exit_event.cancel()
        if report is None or not report.get("clean"):
            run.grade(
                "wall_time_limited",
                "not_enforced",
                "the supervisor did not confirm that every process of the execution was killed "
                "(it was killed itself, or a process outlived the cleanup)",
            )
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        if report is not None:
            run.exit_code = report.get("exit_code")
            run.signal = report.get("signal")
            if run.signal == signal.SIGXCPU and run.limit_hit is None:
                run.limit_hit = "cpu_time"
        # Every holder of the pipes is gone once the cleanup is confirmed; otherwise give the
        # readers a moment and keep what they got.
        _, pending = await asyncio.wait(readers, timeout=_STOP_GRACE)
        for task in (*pending, feeder):
            task.cancel()
        await asyncio.gather(*pending, feeder, return_exceptions=True)

    def _grade_setup(
        self, request: ExecRequest, run: _Run, launcher: dict[str, Any], child: dict[str, Any]
    ) -> None:
        rlimits: dict[str, str] = child.get("rlimits", {})
        if launcher.get("subreaper") and self._fault != "wall_time_limited":
            run.grade("wall_time_limited", "enforced")
        else:
            run.grade(
                "wall_time_limited",
                "not_enforced",
                "the supervisor could not become a child subreaper (prctl), so processes that "
                "leave the process group could outlive the execution",
            )
        if request.limits.cpu_seconds is None:
            run.grade("cpu_time_limited", "not_enforced", "the request sets no cpu_seconds")
        elif rlimits.get("RLIMIT_CPU") == "ok":
            run.grade("cpu_time_limited", "enforced")
        else:
            run.grade(
                "cpu_time_limited",
                "not_enforced",
                f"RLIMIT_CPU could not be set: {rlimits.get('RLIMIT_CPU', 'not attempted')}",
            )
        cap_eff = child.get("cap_eff")
        privileged = []
        if child.get("user_error"):
            privileged.append(str(child["user_error"]))
        if child.get("euid") == 0 or child.get("uid") == 0:
            privileged.append("the program runs as root")
        if cap_eff is None:
            privileged.append("its capabilities could not be read")
        elif int(cap_eff, 16) != 0:
            privileged.append(f"it holds capabilities {cap_eff}")
        if not child.get("no_new_privs"):
            privileged.append("no-new-privileges could not be set")
        if privileged:
            grade: Grade = (
                "unknown"
                if privileged == ["its capabilities could not be read"]
                else ("not_enforced")
            )
            run.grade("unprivileged", grade, "; ".join(privileged))
        else:
            run.grade("unprivileged", "enforced")

    @staticmethod
    async def _read(stream: asyncio.StreamReader, run: _Run, which: str, cap: int) -> None:
        buffer = run.stdout if which == "stdout" else run.stderr
        while chunk := await stream.read(_CHUNK):
            room = cap - len(buffer)
            if len(chunk) > room:
                buffer.extend(chunk[: max(room, 0)])
                if which == "stdout":
                    run.stdout_truncated = True
                else:
                    run.stderr_truncated = True
                if run.limit_hit is None:
                    run.limit_hit = "output"
                run.stop.set()
            else:
                buffer.extend(chunk)

    @staticmethod
    async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if data:
                stdin.write(data)
                await stdin.drain()
            stdin.close()
            await stdin.wait_closed()


class _StatusReader:
    """Reads the supervisor's JSON lines from the status pipe without blocking the loop."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "rb", buffering=0)
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.BaseTransport | None = None

    async def _ensure(self) -> asyncio.StreamReader:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=1 << 20)
            self._transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), self._file
            )
            self._reader = reader
        return self._reader

    async def next_event(self, timeout: float | None) -> dict[str, Any] | None:
        """The next report, or None at end of pipe (the supervisor is gone) or on timeout."""
        reader = await self._ensure()
        try:
            line = await asyncio.wait_for(reader.readline(), timeout)
        except TimeoutError:
            return None
        if not line:
            return None
        event: dict[str, Any] = json.loads(line)
        return event

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        else:
            self._file.close()
