"""kill -9 in the middle of two A2A calls: the one the peer's card tags idempotent runs again,
the untagged one is settled ``unknown`` and never sent a second time.

One run on a SQLite file. Worker process A starts both slow skills of the demo peer in one
turn and is killed while they work. The peer is another service: it lives on. Worker process
B takes the run over once A's lease expires: it sends the safe call again (as its start
recorded, from the card), settles the untagged one, and completes the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from psych_runtime import Scope, dispatch
from psych_runtime.records import (
    AttemptStarted,
    Record,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)
from tests.integration._a2a import demo_peer, ledger_lines
from tests.integration._stores import open_store
from tests.integration.a2a_crash_worker import SPEC

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
SCOPE = Scope(tenant="a2a-crash")


def _start(store_url: str, peer_url: str) -> subprocess.Popen[bytes]:
    """A worker process, leading a process group of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.a2a_crash_worker", store_url, peer_url],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the worker drains and closes its connections); SIGKILL if it does not end."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            process.wait()
    _kill_group(process.pid)


async def _both_begun(ledger: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if {"slow-begun", "slow_read-begun"} <= {line[0] for line in ledger_lines(ledger)}:
            return
        assert process.poll() is None, f"worker A ended early with {process.returncode}"
        await asyncio.sleep(0.05)
    raise AssertionError(f"both slow skills did not begin within 30 s: {ledger_lines(ledger)}")


def _of[T](records: Sequence[Record], kind: type[T], call_id: str) -> list[tuple[Record, T]]:
    return [
        (r, r.body)
        for r in records
        if isinstance(r.body, kind) and getattr(r.body, "call_id", None) == call_id
    ]


async def test_a_killed_worker_s_safe_a2a_call_runs_again_and_the_unsafe_one_settles(
    tmp_path: Path,
) -> None:
    store_url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    ledger = tmp_path / "ledger.txt"
    store = open_store(store_url)
    await store.migrate()
    scoped = store.scoped(SCOPE)
    try:
        with demo_peer(ledger) as peer_url:
            run_id = await dispatch(scoped, SPEC, "go")
            first = _start(store_url, peer_url)
            try:
                await _both_begun(ledger, first)
            finally:
                _kill_group(first.pid)  # A dies mid-call; the peer does not
                first.wait()
            second = _start(store_url, peer_url)
            try:
                deadline = time.monotonic() + 60
                while True:
                    row = await store.get_run(SCOPE.tenant, run_id)
                    assert row is not None
                    if row.status in ("completed", "failed", "cancelled"):
                        break
                    assert second.poll() is None, f"worker B ended with {second.returncode}"
                    assert time.monotonic() < deadline, f"run still {row.status} after 60 s"
                    await asyncio.sleep(0.1)
            finally:
                _stop(second)
            records = await scoped.read(run_id)
    finally:
        await store.close()

    assert row.status == "completed", records[-1].body
    assert [r.attempt for r in records if isinstance(r.body, AttemptStarted)] == [1, 2]
    starts = [r.body for r in records if isinstance(r.body, ToolCallStarted)]
    slow_id = next(b.call_id for b in starts if b.name == "peer__slow")
    read_id = next(b.call_id for b in starts if b.name == "peer__slow_read")

    # The untagged skill: started once (recorded unsafe), settled unknown by attempt 2.
    slow_starts = _of(records, ToolCallStarted, slow_id)
    assert [(r.attempt, b.safe_to_retry) for r, b in slow_starts] == [(1, False)]
    assert [r.attempt for r, _ in _of(records, ToolCallSettled, slow_id)] == [2]
    assert not _of(records, ToolCallFinished, slow_id)

    # The idempotent skill: recorded safe when it started, sent again by attempt 2, finished.
    read_starts = _of(records, ToolCallStarted, read_id)
    assert [(r.attempt, b.safe_to_retry) for r, b in read_starts] == [(1, True), (2, None)]
    (read_finished,) = _of(records, ToolCallFinished, read_id)
    assert read_finished[0].attempt == 2 and read_finished[1].result == "slow_read done"
    assert not _of(records, ToolCallSettled, read_id)

    # At the peer: the safe skill's task began twice (two tasks), the unsafe one once.
    kinds = [line[0] for line in ledger_lines(ledger)]
    assert kinds.count("slow_read-begun") == 2, ledger_lines(ledger)
    assert kinds.count("slow-begun") == 1, ledger_lines(ledger)
