"""Approvals across processes on one SQLite file: the run waits holding no worker, a second
process approves, the worker resumes, and the approved tool runs exactly once, crashes or not."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import psych_runtime
from psych_runtime.records import ApprovalDecided, Record
from tests.integration._stores import open_store
from tests.integration.approval_process import SCOPE

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.approval_process", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def _worker(url: str, ledger: Path, fault: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PSYCH_FAULTS", None)
    if fault:
        env["PSYCH_FAULTS"] = fault
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.approval_process", "worker", url, str(ledger)],
        cwd=ROOT,
        env=env,
    )


async def _until(url: str, run_id: str, kind: str) -> list[Record]:
    """Follow the run's log (from this process) until a record of `kind` appears."""
    scoped = open_store(url).scoped(SCOPE)
    seen: list[Record] = []
    async with asyncio.timeout(60):
        async for record in psych_runtime.stream(scoped, run_id, poll=0.05):
            seen.append(record)
            if record.body.type == kind:
                return seen
    raise AssertionError(f"run {run_id} ended without a {kind} record")


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, Path]:
    return f"sqlite:///{tmp_path / 'runs.sqlite'}", tmp_path / "ledger.txt"


async def test_a_second_process_approves_and_the_worker_resumes(files: tuple[str, Path]) -> None:
    url, ledger = files
    run_id = _run("dispatch", url)
    worker = _worker(url, ledger)
    try:
        await _until(url, run_id, "run_suspended")
        store = open_store(url)
        row = await store.get_run(SCOPE.tenant, run_id)
        assert row is not None
        assert (row.status, row.waiting, row.lease_owner) == ("waiting", "approval", None)
        assert not ledger.exists()

        assert _run("approve", url, run_id, "2.0", "ana") == "1"
        await _until(url, run_id, "run_completed")
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0
    assert len(ledger.read_text().splitlines()) == 1
    report = await psych_runtime.report(open_store(url).scoped(SCOPE), run_id)
    call = report.tool_calls[0]
    assert (call.outcome, call.decided_by, call.approved) == ("succeeded", "ana", True)
    assert call.decided_at is not None


@pytest.mark.parametrize(
    "fault", ["after_commit:approval_decided", "after_commit:tool_call_started", None]
)
async def test_a_crash_around_the_approval_runs_the_tool_at_most_once(
    files: tuple[str, Path], fault: str | None
) -> None:
    url, ledger = files
    run_id = _run("dispatch", url)
    first = _worker(url, ledger, fault)
    await _until(url, run_id, "run_suspended")
    if fault is None:
        first.send_signal(signal.SIGKILL)  # a crash while the run waits
        first.wait(timeout=30)
    _run("approve", url, run_id, "2.0", "ana")
    if fault is not None:
        assert first.wait(timeout=30) == -signal.SIGKILL  # died at the armed point
    second = _worker(url, ledger)
    try:
        records = await _until(url, run_id, "run_completed")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    decided = [r for r in records if isinstance(r.body, ApprovalDecided)]
    assert len(decided) == 1
    effects = ledger.read_text().splitlines() if ledger.exists() else []
    report = await psych_runtime.report(open_store(url).scoped(SCOPE), run_id)
    outcome = report.tool_calls[0].outcome
    if fault is not None:
        # The decision moves into the log in the same append as the call's start (one commit
        # per step), so a worker that dies right after it leaves a started call: the refund is
        # not safe to retry, so it is settled unknown, never run a second time.
        assert outcome == "unknown"
        assert len(effects) <= 1
    else:
        assert outcome == "succeeded"
        assert len(effects) == 1


def _streamer(url: str, run_id: str, after: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.stream_process", url, run_id, str(after)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "following\n"
    return process


async def test_stream_from_other_processes_sees_every_record_once_in_order(
    files: tuple[str, Path],
) -> None:
    url, ledger = files
    run_id = _run("dispatch", url)
    whole = _streamer(url, run_id, -1)
    worker = _worker(url, ledger)
    try:
        await _until(url, run_id, "run_suspended")
        tail = _streamer(url, run_id, 3)  # started mid-run, resuming after seq 3
        _run("approve", url, run_id, "2.0", "ana")
        whole_out, _ = whole.communicate(timeout=60)
        tail_out, _ = tail.communicate(timeout=60)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    log = await psych_runtime.read_log(open_store(url).scoped(SCOPE), run_id)
    expected = [f"{r.seq} {r.body.type}" for r in log]
    assert log[-1].body.type == "run_completed"
    assert whole_out.splitlines() == expected
    assert tail_out.splitlines() == [line for line in expected if int(line.split()[0]) > 3]
