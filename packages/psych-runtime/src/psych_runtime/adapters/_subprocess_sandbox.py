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
import os
import signal
import sys
from pathlib import Path
from typing import Any, Final

from psych_adapter_kit import (
    PREPARE_SCRIPT,
    SETUP_FAULTS,
    ProgramStreams,
    Supervisor,
    python_command,
    scratch_folder,
)
from psych_core import SandboxRefused, SandboxUnavailable
from psych_core.ports import (
    GUARANTEES,
    ExecRequest,
    ExecResult,
    ExecTally,
    Guarantee,
    level_at_least,
)

_LAUNCHER: Final = Path(__file__).with_name("_subprocess_launcher.py")
_NOBODY: Final = (65534, 65534)
_DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
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
_Report = dict[str, Any]
"""One JSON line the supervisor or the prepared process reported on the status pipe."""

# What a test can make really fail (psych_runtime.testing.sandbox_faults): an RLIMIT_CPU whose
# soft limit exceeds its hard one, which the kernel refuses.
_CAN_FAIL: Final[frozenset[Guarantee]] = frozenset({"cpu_time_limited"})


class SubprocessSandbox:
    """Runs a program as a child process under rlimits: level ``limited`` at best.

    Args:
        run_as: ``(uid, gid)`` the program runs as. By default a root caller runs it as
            ``nobody`` (65534), and any other caller as itself.
        scratch_root: where per-execution scratch directories are made (the system's temp
            directory by default).
        python: the interpreter that runs the supervisor (this one by default).
    """

    def __init__(
        self,
        *,
        run_as: tuple[int, int] | None = None,
        scratch_root: str | os.PathLike[str] | None = None,
        python: str | None = None,
    ) -> None:
        root = os.name == "posix" and os.geteuid() == 0
        self._run_as = run_as if run_as is not None else (_NOBODY if root else None)
        self._scratch_root = os.fspath(scratch_root) if scratch_root is not None else None
        self._python = python or sys.executable

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
        fault = SETUP_FAULTS.wanted(self.name, _CAN_FAIL)
        tally = ExecTally(self.name)
        tally.grade("output_limited", "enforced")
        for guarantee, reason in _NEVER.items():
            tally.grade(guarantee, "not_enforced", reason)
        owner = self._run_as if self._run_as is not None and os.geteuid() == 0 else None
        async with scratch_folder(request, root=self._scratch_root, owner=owner) as scratch:
            config = {
                "prepare": python_command(self._python, PREPARE_SCRIPT),
                "program": {
                    "rlimits": self._rlimits(request, fault),
                    "user": list(self._run_as) if self._run_as is not None else None,
                    "argv": list(request.argv),
                },
            }
            async with Supervisor(self.name, python=self._python) as supervisor:
                await supervisor.start(
                    _LAUNCHER,
                    config,
                    cwd=os.path.join(scratch, request.cwd),
                    env=self._environment(request, scratch),
                )
                await self._supervise(request, tally, supervisor)
        return tally.result(request)

    # ------------------------------------------------------------------ setup

    def _rlimits(self, request: ExecRequest, fault: Guarantee | None) -> dict[str, list[int]]:
        limits = request.limits
        rlimits = {"RLIMIT_CORE": [0, 0]}
        if limits.cpu_seconds is not None:
            # SIGXCPU at the soft limit, SIGKILL a second later for a program that catches it.
            rlimits["RLIMIT_CPU"] = [limits.cpu_seconds, limits.cpu_seconds + 1]
            if fault == "cpu_time_limited":
                rlimits["RLIMIT_CPU"].reverse()
        if limits.memory_bytes is not None:
            rlimits["RLIMIT_AS"] = [limits.memory_bytes, limits.memory_bytes]
        if limits.processes is not None:
            rlimits["RLIMIT_NPROC"] = [limits.processes, limits.processes]
        if limits.file_bytes is not None:
            rlimits["RLIMIT_FSIZE"] = [limits.file_bytes, limits.file_bytes]
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

    async def _supervise(
        self, request: ExecRequest, tally: ExecTally, supervisor: Supervisor
    ) -> None:
        launcher = await supervisor.next_event(timeout=30.0)
        prepared = await supervisor.next_event(timeout=30.0)
        if launcher is None or prepared is None or prepared.get("event") != "prepared":
            raise SandboxUnavailable(
                self.name, "the supervisor died during setup (is /proc mounted? is Python intact?)"
            )
        self._grade_setup(request, tally, launcher, prepared)
        if not supervisor.answer(request, tally):
            await supervisor.next_event(timeout=_STOP_GRACE)  # its cleanup, reported
            return
        async with ProgramStreams(supervisor.process, tally, request) as streams:
            exit_event = asyncio.create_task(supervisor.next_event(timeout=None))
            stopped_by = await streams.wait(exit_event, request.limits.wall_seconds)
            if stopped_by is not None:
                tally.hit(stopped_by)
                supervisor.terminate()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(exit_event), _STOP_GRACE)
            report = exit_event.result() if exit_event.done() else None
            exit_event.cancel()
            if report is None or not report.get("clean"):
                tally.grade(
                    "wall_time_limited",
                    "not_enforced",
                    "the supervisor did not confirm that every process of the execution was "
                    "killed (it was killed itself, or a process outlived the cleanup)",
                )
                supervisor.kill()
            if report is not None:
                tally.exit_code = report.get("exit_code")
                tally.signal = report.get("signal")
                if tally.signal == signal.SIGXCPU:
                    tally.hit("cpu_time")
            # Every holder of the pipes is gone once the cleanup is confirmed; otherwise give
            # the readers a moment and keep what they got.
            await streams.drain(_STOP_GRACE)

    def _grade_setup(
        self, request: ExecRequest, tally: ExecTally, launcher: _Report, prepared: _Report
    ) -> None:
        if launcher.get("subreaper"):
            tally.grade("wall_time_limited", "enforced")
        else:
            tally.grade(
                "wall_time_limited",
                "not_enforced",
                "the supervisor could not become a child subreaper (prctl), so processes that "
                "leave the process group could outlive the execution",
            )
        cpu: str | None = prepared.get("rlimits", {}).get("RLIMIT_CPU")
        tally.grade_limit(
            "cpu_time_limited",
            request.limits.cpu_seconds,
            None if cpu == "ok" else f"RLIMIT_CPU could not be set: {cpu or 'not attempted'}",
        )
        cap_eff = prepared.get("cap_eff")
        privileged = []
        if prepared.get("user_error"):
            privileged.append(str(prepared["user_error"]))
        if prepared.get("euid") == 0 or prepared.get("uid") == 0:
            privileged.append("the program runs as root")
        if cap_eff is None:
            privileged.append("its capabilities could not be read")
        elif int(cap_eff, 16) != 0:
            privileged.append(f"it holds capabilities {cap_eff}")
        if not prepared.get("no_new_privs"):
            privileged.append("no-new-privileges could not be set")
        unread = privileged == ["its capabilities could not be read"]
        tally.grade_checks("unprivileged", privileged, "unknown" if unread else "not_enforced")
