"""kill -9 in the middle of two A2A calls: the one the peer's card tags idempotent runs again,
the untagged one is settled ``unknown`` and never sent a second time.

One run on a SQLite file. Worker process A starts both slow skills of the demo peer in one
turn and is killed while they work. The peer is another service: it lives on. Worker process
B takes the run over once A's lease expires: it sends the safe call again (as its start
recorded, from the card), settles the untagged one, and completes the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from psych_runtime import Scope, dispatch
from psych_runtime.records import (
    AttemptStarted,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)
from tests.integration._a2a import demo_peer, ledger_lines
from tests.integration._crash_kit import about, begun, ended, kill_group, start_worker, stop
from tests.integration._stores import open_store
from tests.integration.a2a_crash_worker import SPEC

pytestmark = pytest.mark.timeout(120)

SCOPE = Scope(tenant="a2a-crash")
WORKER = "tests.integration.a2a_crash_worker"


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
            first = start_worker(WORKER, store_url, peer_url)
            try:
                await begun(lambda: ledger_lines(ledger), ("slow-begun", "slow_read-begun"), first)
            finally:
                kill_group(first.pid)  # A dies mid-call; the peer does not
                first.wait()
            second = start_worker(WORKER, store_url, peer_url)
            try:
                row = await ended(store, SCOPE, run_id, second)
            finally:
                stop(second)
            records = await scoped.read(run_id)
    finally:
        await store.close()

    assert row.status == "completed", records[-1].body
    assert [r.attempt for r in records if isinstance(r.body, AttemptStarted)] == [1, 2]
    starts = [r.body for r in records if isinstance(r.body, ToolCallStarted)]
    slow_id = next(b.call_id for b in starts if b.name == "peer__slow")
    read_id = next(b.call_id for b in starts if b.name == "peer__slow_read")

    # The untagged skill: started once (recorded unsafe), settled unknown by attempt 2.
    slow_starts = about(records, ToolCallStarted, slow_id)
    assert [(r.attempt, b.safe_to_retry) for r, b in slow_starts] == [(1, False)]
    assert [r.attempt for r, _ in about(records, ToolCallSettled, slow_id)] == [2]
    assert not about(records, ToolCallFinished, slow_id)

    # The idempotent skill: recorded safe when it started, sent again by attempt 2, finished.
    read_starts = about(records, ToolCallStarted, read_id)
    assert [(r.attempt, b.safe_to_retry) for r, b in read_starts] == [(1, True), (2, None)]
    (read_finished,) = about(records, ToolCallFinished, read_id)
    assert read_finished[0].attempt == 2 and read_finished[1].result == "slow_read done"
    assert not about(records, ToolCallSettled, read_id)

    # At the peer: the safe skill's task began twice (two tasks), the unsafe one once.
    kinds = [line[0] for line in ledger_lines(ledger)]
    assert kinds.count("slow_read-begun") == 2, ledger_lines(ledger)
    assert kinds.count("slow-begun") == 1, ledger_lines(ledger)
