"""The adapter kit's sandbox pieces, with real files and processes: who releases what."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from psych_adapter_kit import (
    PREPARE_SCRIPT,
    SETUP_FAULTS,
    ProgramStreams,
    Supervisor,
    scratch_folder,
)
from psych_core import ExecLimits, ExecRequest, ExecTally, Guarantee, SandboxUnavailable
from psych_runtime.testing.sandbox_faults import failing_setup

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

# A supervisor that reports, then leaves a grandchild in its process group and waits forever.
_LINGERING = """
import json, os, subprocess, sys, time
config = json.loads(sys.argv[1])
child = subprocess.Popen(["sleep", "60"])
os.write(config["status_fd"], (json.dumps({"grandchild": child.pid}) + "\\n").encode())
time.sleep(60)
"""


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _look_inside(scratch: Path) -> None:
    assert (scratch / "in" / "a.txt").read_bytes() == b"A"
    assert (scratch / "work" / "here").is_dir()
    assert scratch.stat().st_mode & 0o777 == 0o700
    (scratch / "left-behind").write_text("by the program")


def _request(script: str = "true", **limits: float) -> ExecRequest:
    return ExecRequest(argv=("sh", "-c", script), limits=ExecLimits(**limits))  # type: ignore[arg-type]


# -- scratch folders ----------------------------------------------------------------------


async def test_a_scratch_folder_holds_the_files_and_is_removed(tmp_path: Path) -> None:
    request = ExecRequest(argv=("true",), files={"in/a.txt": b"A"}, cwd="work/here")
    async with scratch_folder(request, root=str(tmp_path)) as scratch:
        assert Path(scratch).parent == tmp_path
        await asyncio.to_thread(_look_inside, Path(scratch))
    assert await asyncio.to_thread(os.listdir, tmp_path) == []


async def test_a_scratch_folder_is_removed_when_the_block_fails(tmp_path: Path) -> None:
    request = ExecRequest(argv=("true",), files={"a.txt": b"A"})
    with pytest.raises(RuntimeError, match="boom"):
        async with scratch_folder(request, root=str(tmp_path)):
            raise RuntimeError("boom")
    assert await asyncio.to_thread(os.listdir, tmp_path) == []


async def test_a_scratch_folder_that_cannot_be_filled_is_removed(tmp_path: Path) -> None:
    # "a" is a file, so "a/b" cannot be made under it.
    request = ExecRequest(argv=("true",), files={"a": b"file", "a/b": b"under a file"})
    with pytest.raises(FileExistsError):
        async with scratch_folder(request, root=str(tmp_path)):
            pytest.fail("the block must not run")
    assert await asyncio.to_thread(os.listdir, tmp_path) == []


# -- the supervisor -----------------------------------------------------------------------


async def test_leaving_the_block_kills_the_whole_group_and_closes_every_pipe(
    tmp_path: Path,
) -> None:
    script = tmp_path / "lingering.py"
    script.write_text(_LINGERING)
    before = _open_fds()
    async with Supervisor("kit-test", python=sys.executable) as supervisor:
        await supervisor.start(script, {}, cwd=str(tmp_path), env={"PATH": os.environ["PATH"]})
        event = await supervisor.next_event(timeout=20.0)
        assert event is not None
        grandchild = int(event["grandchild"])
        process = supervisor.process
        assert _alive(grandchild)
    assert process.returncode is not None  # reaped
    for _ in range(100):  # the grandchild's parent reaps it once it has died
        if not _alive(grandchild):
            break
        await asyncio.sleep(0.02)
    assert not _alive(grandchild)
    assert _open_fds() == before


async def test_an_interpreter_that_cannot_start_is_unavailable_and_leaks_nothing(
    tmp_path: Path,
) -> None:
    before = _open_fds()
    passed, unused = os.pipe()
    os.close(unused)

    async def start_missing() -> None:
        async with Supervisor("kit-test", python=str(tmp_path / "no-python")) as supervisor:
            await supervisor.start(PREPARE_SCRIPT, {}, cwd=str(tmp_path), env={}, pass_fds=[passed])

    with pytest.raises(SandboxUnavailable, match="kit-test") as raised:
        await start_missing()
    assert "could not start the supervisor" in str(raised.value)
    assert _open_fds() == before


async def test_the_prepare_script_reports_each_step_and_starts_only_on_go(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    request = _request(f"touch {marker}")
    config = {
        # A soft limit above the hard one: the kernel refuses it, and the script says so.
        "rlimits": {"RLIMIT_CPU": [5, 4], "RLIMIT_CORE": [0, 0]},
        "argv": list(request.argv),
    }
    tally = ExecTally("kit-test")
    async with Supervisor("kit-test", python=sys.executable) as supervisor:
        await supervisor.start(
            PREPARE_SCRIPT, config, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"}
        )
        prepared = await supervisor.next_event(timeout=20.0)
        assert prepared is not None and prepared["event"] == "prepared"
        assert prepared["rlimits"]["RLIMIT_CORE"] == "ok"
        assert prepared["rlimits"]["RLIMIT_CPU"].startswith("failed")
        assert (prepared["uid"], prepared["euid"]) == (os.getuid(), os.geteuid())
        tally.grade("cpu_time_limited", "not_enforced", prepared["rlimits"]["RLIMIT_CPU"])
        required = ExecRequest(argv=request.argv, require=frozenset({"cpu_time_limited"}))
        assert not supervisor.answer(required, tally)
        assert await supervisor.wait(timeout=20.0) == 125
    assert not marker.exists()


async def test_the_program_runs_on_go_with_its_streams_fed_and_capped(tmp_path: Path) -> None:
    request = ExecRequest(
        argv=("sh", "-c", "cat; echo err >&2; head -c 100000 /dev/zero"),
        stdin=b"in-",
        limits=ExecLimits(output_bytes=1000),
    )
    tally = ExecTally("kit-test")
    async with Supervisor("kit-test", python=sys.executable) as supervisor:
        config = {"argv": list(request.argv)}
        await supervisor.start(
            PREPARE_SCRIPT, config, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"}
        )
        assert await supervisor.next_event(timeout=20.0) is not None
        assert supervisor.answer(request, tally)
        async with ProgramStreams(supervisor.process, tally, request) as streams:
            exited = asyncio.ensure_future(supervisor.wait())
            stopped_by = await streams.wait(exited, seconds=20.0)
            if stopped_by is not None:
                supervisor.kill()
            await exited
            await streams.drain(5.0)
    assert stopped_by in (None, "output")  # the program may finish writing before the stop
    assert streams.overflow.is_set()
    assert bytes(tally.stdout) == b"in-" + b"\0" * 997
    assert (bytes(tally.stderr), tally.stdout_truncated, tally.limit_hit) == (
        b"err\n",
        True,
        "output",
    )


async def test_the_wall_time_stops_a_program_that_does_not_end(tmp_path: Path) -> None:
    request = _request("sleep 30")
    tally = ExecTally("kit-test")
    async with Supervisor("kit-test", python=sys.executable) as supervisor:
        await supervisor.start(
            PREPARE_SCRIPT,
            {"argv": list(request.argv)},
            cwd=str(tmp_path),
            env={"PATH": "/usr/bin:/bin"},
        )
        assert await supervisor.next_event(timeout=20.0) is not None
        assert supervisor.answer(request, tally)
        async with ProgramStreams(supervisor.process, tally, request) as streams:
            exited = asyncio.ensure_future(supervisor.wait())
            assert await streams.wait(exited, seconds=0.2) == "wall_time"
            supervisor.kill()
            assert await exited == -9


# -- the setup-fault hook -----------------------------------------------------------------


async def test_the_setup_fault_hook_is_quiet_outside_its_block() -> None:
    can_fail: frozenset[Guarantee] = frozenset({"memory_limited"})
    assert SETUP_FAULTS.wanted("kit-test", can_fail) is None
    go = asyncio.Event()

    async def elsewhere() -> object:
        await go.wait()
        return SETUP_FAULTS.wanted("kit-test", can_fail)

    other_task = asyncio.create_task(elsewhere())  # started before the block
    with failing_setup("memory_limited"):
        assert SETUP_FAULTS.wanted("kit-test", can_fail) == "memory_limited"
        # A thread started from the block sees it (sandboxes do their blocking work in one).
        assert await asyncio.to_thread(SETUP_FAULTS.wanted, "kit-test", can_fail) == (
            "memory_limited"
        )
        go.set()
        assert await other_task is None
    assert SETUP_FAULTS.wanted("kit-test", can_fail) is None


async def test_a_fault_the_backend_cannot_make_is_an_error_naming_it() -> None:
    with failing_setup("reads_confined"), pytest.raises(ValueError, match="the kit-test sandbox"):
        SETUP_FAULTS.wanted("kit-test", {"memory_limited", "process_count_limited"})
    with pytest.raises(ValueError, match="unknown guarantee"), failing_setup("no_such"):  # type: ignore[arg-type]
        pytest.fail("the block must not run")
