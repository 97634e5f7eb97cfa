"""The sandbox contract suite against `SubprocessSandbox`, plus what is specific to it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from psych_runtime import SubprocessSandbox
from psych_runtime.errors import SandboxRefused
from psych_runtime.ports import ExecRequest, Sandbox
from psych_runtime.testing.sandbox_contract import SandboxContract
from psych_runtime.testing.sandbox_faults import failing_setup

# Run as root (as CI is), the backend switches the program to `nobody`, so it is unprivileged;
# it never confines reads, writes, the network or other processes.
_ROOT = os.geteuid() == 0


class TestSubprocessSandbox(SandboxContract):
    level = "limited"
    enforces = (
        "wall_time_limited",
        "cpu_time_limited",
        "output_limited",
        *(("unprivileged",) if _ROOT else ()),
    )

    setup_fault = "cpu_time_limited"

    def create_sandbox(self) -> Sandbox:
        return SubprocessSandbox()


async def test_kernel_is_refused_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    sandbox = SubprocessSandbox()
    request = ExecRequest(argv=("touch", str(marker)), require_level="kernel")
    with pytest.raises(SandboxRefused, match="level:kernel") as refused:
        await sandbox.run(request)
    assert refused.value.backend == "subprocess"
    assert not marker.exists()
    with pytest.raises(SandboxRefused):
        sandbox.check(request)


async def test_isolation_guarantees_are_refused_by_name(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    request = ExecRequest(argv=("touch", str(marker)), require=frozenset({"network_isolated"}))
    with pytest.raises(SandboxRefused) as refused:
        await SubprocessSandbox().run(request)
    assert refused.value.unmet == ("network_isolated",)
    assert not marker.exists()


async def test_a_setup_failure_found_before_the_start_never_runs_the_program(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    os.chmod(tmp_path, 0o777)
    request = ExecRequest(argv=("touch", str(marker)), require=frozenset({"cpu_time_limited"}))
    with failing_setup("cpu_time_limited"):
        result = await SubprocessSandbox().run(request)
    assert result.withheld is not None and "RLIMIT_CPU" in result.withheld
    assert result.grades["cpu_time_limited"] == "not_enforced"
    assert not marker.exists()


async def test_the_scratch_directory_is_removed(tmp_path: Path) -> None:
    sandbox = SubprocessSandbox(scratch_root=tmp_path)
    result = await sandbox.run(ExecRequest(argv=("pwd",)))
    scratch = Path(result.stdout_text.strip())
    assert scratch.parent == tmp_path
    assert scratch.name not in await asyncio.to_thread(os.listdir, tmp_path)
