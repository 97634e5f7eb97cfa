"""The sandbox contract suite against `NamespaceSandbox`, plus what is specific to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from psych_core import GUARANTEES, ExecLimits, ExecRequest, Sandbox, SandboxRefused
from psych_runtime.testing.sandbox_contract import SandboxContract
from psych_sandbox_namespaces import NamespaceSandbox
from tests.contract._sandbox_hosts import require_bwrap


class TestNamespaceSandbox(SandboxContract):
    level = "kernel"
    enforces = GUARANTEES

    setup_fault = "memory_limited"

    def create_sandbox(self) -> Sandbox:
        require_bwrap()
        return NamespaceSandbox()


def _script(text: str, **limits: float | int | None) -> ExecRequest:
    return ExecRequest(argv=("busybox", "sh", "-c", text), limits=ExecLimits(**limits))  # type: ignore[arg-type]


async def test_the_seccomp_filter_blocks_new_user_namespaces_and_mounts() -> None:
    require_bwrap()
    result = await NamespaceSandbox().run(
        _script("busybox unshare -U true; echo u=$?; busybox mount -t tmpfs x /tmp; echo m=$?")
    )
    assert b"u=1" in result.stdout and b"m=1" in result.stdout, result.stderr
    assert b"Operation not permitted" in result.stderr


async def test_only_the_chosen_paths_are_visible() -> None:
    require_bwrap()
    result = await NamespaceSandbox().run(
        _script("ls /; ls /etc; test -e /root && echo ROOT; test -e /home && echo HOME")
    )
    listed = result.stdout.split()
    assert b"root" not in listed and b"home" not in listed and b"shadow" not in listed
    assert b"ROOT" not in result.stdout and b"HOME" not in result.stdout
    assert b"ld.so.cache" in listed


async def test_a_cgroup_root_that_is_not_a_cgroup_is_caught_and_withheld(tmp_path: Path) -> None:
    require_bwrap()
    sandbox = NamespaceSandbox(cgroup_root=tmp_path)
    request = ExecRequest(
        argv=("busybox", "sh", "-c", "echo SECRET"),
        require=frozenset({"memory_limited", "process_count_limited"}),
    )
    result = await sandbox.run(request)
    assert result.withheld is not None and result.stdout == b""
    assert result.grades["memory_limited"] == "not_enforced"
    assert result.grades["process_count_limited"] == "not_enforced"
    assert "not placed" in result.reasons["memory_limited"]
    relaxed = await sandbox.run(ExecRequest(argv=("busybox", "sh", "-c", "echo SECRET")))
    assert relaxed.stdout == b"SECRET\n" and relaxed.withheld is None
    assert relaxed.grades["memory_limited"] == "not_enforced"
    assert relaxed.level == "kernel"  # memory is not part of the level: it is its own grade


async def test_without_bubblewrap_kernel_is_refused_not_approximated(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    sandbox = NamespaceSandbox(bwrap=str(tmp_path / "no-bwrap-here"))
    request = ExecRequest(argv=("touch", str(marker)), require_level="kernel")
    with pytest.raises(SandboxRefused, match="bubblewrap"):
        await sandbox.run(request)
    assert not marker.exists()


async def test_egress_is_graded_not_isolated() -> None:
    require_bwrap()
    result = await NamespaceSandbox().run(
        ExecRequest(argv=("busybox", "true"), network="egress", require_level="kernel")
    )
    assert result.withheld is None
    assert result.grades["network_isolated"] == "not_enforced"
    assert result.level == "kernel"
