"""The sandbox contract suite: one abstract pytest class that every `Sandbox` backend passes.

Subclass `SandboxContract` in a test module, fill in the hooks, and pytest runs every test::

    class TestMySandbox(SandboxContract):
        level = "kernel"
        enforces = GUARANTEES  # what this backend enforces on this host
        setup_fault = "memory_limited"  # what it can make fail on demand

        def create_sandbox(self) -> Sandbox:
            return MySandbox()

The setup-failure tests run the backend inside `sandbox_faults.failing_setup(setup_fault)`:
the backend must then make that guarantee's setup really fail (it asks
``psych_adapter_kit.SETUP_FAULTS.wanted(name, can_fail)`` at the start of each run).

Each escape test tries the escape for real (read the host's ``/etc/shadow`` and a file the test
planted, write outside the scratch, connect to a listener on 127.0.0.1, a fork bomb, a memory
bomb, signal a host process, read another process's environment, overrun wall and CPU time,
flood stdout) and judges the result by one rule: an escape that worked must not be graded
``enforced``, and a guarantee the backend declares in `enforces` must block its escape and be
graded ``enforced``. Bombs are bounded by the test itself (at most 200 processes, at most
1 GiB), so a failed limit cannot take the host down.

The programs are POSIX shell run with busybox (`shell`): the backend must offer busybox 1.30+
on its PATH (``busybox`` with ``sh``, ``awk``, ``nc``, ``setsid``, ``yes``).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import pytest_asyncio

from psych_core import (
    GUARANTEES,
    ExecLimits,
    ExecRequest,
    ExecResult,
    Guarantee,
    IsolationLevel,
    Sandbox,
)
from psych_runtime.testing.sandbox_faults import failing_setup

BOMB_PROCESSES = 200
"""How many processes the fork bomb tries to start: the bound if the limit fails."""

BOMB_BYTES = 1 << 30
"""How large a string the memory bomb builds: the bound if the limit fails."""


class HostProcess:
    """A process of the test's own on the host, with a secret in its environment."""

    def __init__(self) -> None:
        self.canary = f"psych-canary-{secrets.token_hex(8)}"
        self.process = subprocess.Popen(
            ["sleep", "60"],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PSYCH_CANARY": self.canary},
        )

    @property
    def pid(self) -> int:
        """The process id on the host."""
        return self.process.pid

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def close(self) -> None:
        """Kill and reap it."""
        if self.alive():
            self.process.kill()
        self.process.wait()


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Listen on an ephemeral loopback port."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()

    async def close(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


class SandboxContract:
    """The contract every `Sandbox` backend keeps; see the module docstring for the hooks."""

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.asyncio]

    level: ClassVar[IsolationLevel] = "limited"
    """The isolation level a plain execution reaches on this host."""

    enforces: ClassVar[frozenset[Guarantee] | tuple[Guarantee, ...]] = ()
    """The guarantees this backend enforces on this host: their escapes must be blocked."""

    shell: ClassVar[tuple[str, ...]] = ("busybox", "sh", "-c")
    """How to run a shell script inside the sandbox."""

    def create_sandbox(self) -> Sandbox:
        """Return the backend under test. Override this."""
        raise NotImplementedError(
            f"{type(self).__name__} must override `def create_sandbox(self) -> Sandbox`"
        )

    setup_fault: ClassVar[Guarantee | None] = None
    """A guarantee this backend enforces, and whose setup it makes really fail at run time
    while `psych_runtime.testing.sandbox_faults.failing_setup` arms it. Set this."""

    def failing(self) -> Guarantee:
        """`setup_fault`, which a subclass must set."""
        if self.setup_fault is None:
            pytest.fail(
                f"{type(self).__name__} must set `setup_fault` to a guarantee its backend "
                "makes really fail under psych_runtime.testing.sandbox_faults.failing_setup"
            )
        return self.setup_fault

    # -- fixtures and helpers --------------------------------------------------------------

    @pytest.fixture
    def sandbox(self) -> Sandbox:
        """The backend from `create_sandbox`."""
        return self.create_sandbox()

    @pytest.fixture
    def host_dir(self) -> Iterator[Path]:
        """A host directory anyone may read and write, outside every sandbox's grants."""
        path = Path(tempfile.mkdtemp(prefix="psych-contract-"))
        path.chmod(0o777)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    @pytest.fixture
    def host_process(self) -> Iterator[HostProcess]:
        """A process the test owns on the host."""
        process = HostProcess()
        try:
            yield process
        finally:
            process.close()

    @pytest_asyncio.fixture
    async def listener(self) -> AsyncIterator[Listener]:
        """A TCP listener on 127.0.0.1."""
        listener = Listener()
        await listener.start()
        try:
            yield listener
        finally:
            await listener.close()

    def sh(
        self,
        script: str,
        *,
        require: frozenset[Guarantee] | tuple[Guarantee, ...] = (),
        require_level: IsolationLevel = "none",
        **limits: float | int | None,
    ) -> ExecRequest:
        """A request that runs `script` with `shell`, with test-sized limits by default."""
        settings: dict[str, float | int | None] = {
            "wall_seconds": 20.0,
            "cpu_seconds": 10,
            "memory_bytes": 256 << 20,
            "processes": 32,
            "output_bytes": 1 << 20,
        }
        settings.update(limits)
        return ExecRequest(
            argv=(*self.shell, script),
            limits=ExecLimits(**settings),  # type: ignore[arg-type]
            require=frozenset(require),
            require_level=require_level,
        )

    def judge(self, result: ExecResult, guarantee: Guarantee, *, escaped: bool, what: str) -> None:
        """The one rule: a working escape is never graded enforced, and what the backend
        declares enforced is blocked and graded so."""
        grade = result.grades[guarantee]
        if escaped:
            assert grade != "enforced", (
                f"{result.backend} graded {guarantee} 'enforced', yet {what} succeeded"
            )
        if guarantee in self.enforces:
            assert not escaped, f"{result.backend}: {what} succeeded ({guarantee} must block it)"
            assert grade == "enforced", (
                f"{result.backend} blocked {what} but graded {guarantee} {grade!r}: "
                f"{result.reasons.get(guarantee)}"
            )

    @staticmethod
    def assert_graded(result: ExecResult) -> None:
        """Every one of the ten guarantees has a valid grade, and a reason unless enforced."""
        assert set(result.grades) == set(GUARANTEES)
        for guarantee, grade in result.grades.items():
            assert grade in ("enforced", "not_enforced", "unknown")
            if grade != "enforced":
                assert result.reasons.get(guarantee), f"{guarantee} is {grade} with no reason"

    # -- running ---------------------------------------------------------------------------

    async def test_runs_a_program_and_grades_all_ten(self, sandbox: Sandbox) -> None:
        result = await sandbox.run(self.sh("echo hello; echo oops >&2; exit 3"))
        self.assert_graded(result)
        assert result.withheld is None
        assert (result.exit_code, result.signal) == (3, None)
        assert (result.stdout, result.stderr) == (b"hello\n", b"oops\n")
        assert result.level == self.level, result.reasons
        assert result.backend == sandbox.name
        for guarantee in self.enforces:
            assert result.grades[guarantee] == "enforced", (guarantee, result.reasons)

    async def test_reports_a_signal(self, sandbox: Sandbox) -> None:
        result = await sandbox.run(self.sh("kill -KILL $$"))
        assert (result.exit_code, result.signal) == (None, signal.SIGKILL)

    async def test_stdin_files_env_and_working_directory(self, sandbox: Sandbox) -> None:
        request = ExecRequest(
            argv=(
                *self.shell,
                'cat in.txt; echo; cat; echo; echo "$GREETING"; echo made > out.txt; cat out.txt',
            ),
            stdin=b"from-stdin",
            files={"data/in.txt": b"from-file"},
            env={"GREETING": "hi there"},
            cwd="data",
            limits=ExecLimits(wall_seconds=20),
        )
        result = await sandbox.run(request)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == b"from-file\nfrom-stdin\nhi there\nmade\n"

    async def test_environment_is_scrubbed(
        self, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        token = f"psych-leak-{secrets.token_hex(8)}"
        monkeypatch.setenv("PSYCH_CONTRACT_LEAK", token)
        result = await sandbox.run(self.sh("env"))
        assert result.exit_code == 0
        assert token.encode() not in result.stdout

    async def test_requirements_it_meets_are_not_withheld(self, sandbox: Sandbox) -> None:
        request = self.sh("echo kept", require=frozenset(self.enforces), require_level=self.level)
        sandbox.check(request)
        result = await sandbox.run(request)
        assert result.withheld is None, result.withheld
        assert result.stdout == b"kept\n"

    async def test_a_setup_failure_withholds_the_output(self, sandbox: Sandbox) -> None:
        guarantee = self.failing()
        request = self.sh("echo SECRET-OUTPUT; echo SECRET-ERR >&2", require=(guarantee,))
        with failing_setup(guarantee):
            sandbox.check(request)  # the failure is only found at run time
            result = await sandbox.run(request)
        self.assert_graded(result)
        assert result.grades[guarantee] != "enforced"
        assert result.withheld is not None
        assert guarantee in result.withheld
        assert (result.stdout, result.stderr) == (b"", b"")
        assert (result.exit_code, result.signal) == (None, None)

    async def test_a_setup_failure_ends_with_its_block(self, sandbox: Sandbox) -> None:
        guarantee = self.failing()
        request = self.sh("echo kept", require=(guarantee,))
        with failing_setup(guarantee):
            await sandbox.run(request)
        result = await sandbox.run(request)
        assert result.withheld is None, result.withheld
        assert result.grades[guarantee] == "enforced", result.reasons.get(guarantee)
        assert result.stdout == b"kept\n"

    async def test_a_setup_failure_it_cannot_make_is_an_error(self, sandbox: Sandbox) -> None:
        candidates: tuple[Guarantee, ...] = ("reads_confined", "output_limited")
        cannot = next(g for g in candidates if g != self.failing())
        with failing_setup(cannot), pytest.raises(ValueError, match=re.escape(sandbox.name)):
            await sandbox.run(self.sh("echo never"))

    # -- escapes ---------------------------------------------------------------------------

    async def test_escape_read_host_shadow(self, sandbox: Sandbox) -> None:
        result = await sandbox.run(self.sh("cat /etc/shadow"))
        escaped = b"root:" in result.stdout
        self.judge(result, "reads_confined", escaped=escaped, what="reading /etc/shadow")

    async def test_escape_read_planted_file(self, sandbox: Sandbox, host_dir: Path) -> None:
        secret = f"psych-planted-{secrets.token_hex(8)}"
        planted = _plant(host_dir / "planted.txt", secret)
        result = await sandbox.run(self.sh(f"cat {planted}"))
        escaped = secret.encode() in result.stdout
        self.judge(result, "reads_confined", escaped=escaped, what=f"reading {planted}")

    async def test_escape_write_outside_scratch(self, sandbox: Sandbox, host_dir: Path) -> None:
        target = host_dir / "escaped.txt"
        result = await sandbox.run(self.sh(f"echo out > {target}"))
        self.judge(result, "writes_confined", escaped=target.exists(), what=f"writing {target}")

    async def test_escape_network(self, sandbox: Sandbox, listener: Listener) -> None:
        result = await sandbox.run(
            self.sh(f"echo hi | busybox nc -w 2 127.0.0.1 {listener.port}", wall_seconds=10)
        )
        await asyncio.sleep(0.1)
        escaped = listener.connections > 0
        self.judge(result, "network_isolated", escaped=escaped, what="connecting to 127.0.0.1")

    async def test_escape_fork_bomb(self, sandbox: Sandbox) -> None:
        limit = 16
        script = (
            f"i=0; while [ $i -lt {BOMB_PROCESSES} ]; do "
            "(echo child; exec sleep 2) & i=$((i+1)); done; wait"
        )
        result = await sandbox.run(self.sh(script, processes=limit, wall_seconds=10))
        started = result.stdout.count(b"child\n")
        escaped = started > limit
        self.judge(result, "process_count_limited", escaped=escaped, what=f"{started} processes")

    async def test_escape_memory_bomb(self, sandbox: Sandbox) -> None:
        doublings = (BOMB_BYTES // 16).bit_length() - 1
        script = (
            f'awk \'BEGIN {{ s = "xxxxxxxxxxxxxxxx"; for (i = 0; i < {doublings}; i++) '
            "s = s s; print length(s) }'"
        )
        result = await sandbox.run(self.sh(script, memory_bytes=64 << 20, wall_seconds=15))
        escaped = str(BOMB_BYTES).encode() in result.stdout
        self.judge(result, "memory_limited", escaped=escaped, what="holding 1 GiB")

    async def test_escape_signal_host_process(
        self, sandbox: Sandbox, host_process: HostProcess
    ) -> None:
        result = await sandbox.run(self.sh(f"kill -KILL {host_process.pid}"))
        await asyncio.sleep(0.1)
        escaped = not host_process.alive()
        self.judge(result, "process_isolated", escaped=escaped, what="killing a host process")

    async def test_escape_read_process_environment(
        self, sandbox: Sandbox, host_process: HostProcess
    ) -> None:
        result = await sandbox.run(self.sh(f"cat /proc/{host_process.pid}/environ"))
        escaped = host_process.canary.encode() in result.stdout
        self.judge(result, "process_isolated", escaped=escaped, what="reading another's environ")

    async def test_escape_wall_time(self, sandbox: Sandbox) -> None:
        survivor = f"31.{secrets.randbelow(10**6):06d}"
        started = time.monotonic()
        result = await sandbox.run(
            self.sh(f"busybox setsid busybox sleep {survivor} & sleep 30", wall_seconds=1)
        )
        elapsed = time.monotonic() - started
        await asyncio.sleep(0.2)
        survived = _processes_with(survivor)
        for pid in survived:  # never leave it behind, whatever the verdict
            os.kill(pid, signal.SIGKILL)
        escaped = elapsed > 10 or bool(survived)
        self.judge(result, "wall_time_limited", escaped=escaped, what="outliving the wall time")
        if result.grades["wall_time_limited"] == "enforced":
            assert result.limit_hit == "wall_time"

    async def test_escape_cpu_time(self, sandbox: Sandbox) -> None:
        started = time.monotonic()
        result = await sandbox.run(self.sh("while :; do :; done", cpu_seconds=1, wall_seconds=20))
        elapsed = time.monotonic() - started
        escaped = result.limit_hit == "wall_time" or elapsed > 10
        self.judge(result, "cpu_time_limited", escaped=escaped, what="spinning past the CPU limit")
        if not escaped:
            assert result.signal is not None, "a program stopped by RLIMIT_CPU dies by a signal"

    async def test_escape_stdout_flood(self, sandbox: Sandbox) -> None:
        cap = 64 << 10
        started = time.monotonic()
        result = await sandbox.run(self.sh("busybox yes", output_bytes=cap, wall_seconds=20))
        elapsed = time.monotonic() - started
        escaped = len(result.stdout) > cap or not result.stdout_truncated or elapsed > 10
        self.judge(result, "output_limited", escaped=escaped, what="flooding stdout")
        if not escaped:
            assert (len(result.stdout), result.limit_hit) == (cap, "output")


def _plant(path: Path, secret: str) -> Path:
    """A world-readable file holding `secret`, in a world-readable directory."""
    path.write_text(secret)
    path.chmod(0o644)
    path.parent.chmod(0o755)
    return path


def _processes_with(marker: str) -> list[int]:
    """Host processes whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found
