"""kill -9 right after ``remember`` stored its fact and before its finish was recorded: the
next attempt runs the call again (it is safe to retry), and the fact is stored once.

One run on a SQLite file that holds both the runs and the user memory. Worker process A
remembers a fact and dies at once (SIGKILL at the ``after_tool_returned`` fault point). Worker
process B takes the run over once A's lease expires, runs the call again with the same
idempotency key, gets the same fact back, and completes the run with the fact recalled.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from psych_runtime import Scope, dispatch
from psych_runtime.records import (
    AttemptStarted,
    ModelCallFinished,
    ToolCallFinished,
    ToolCallStarted,
)
from psych_store_sqlite import SQLiteStore, SQLiteUserMemory
from tests.integration._crash_kit import about, ended, start_worker, stop
from tests.integration.memory_crash_worker import FACT, SPEC

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ALICE = Scope(tenant="memory-crash", principal="alice")
WORKER = "tests.integration.memory_crash_worker"


async def test_a_remember_cut_off_by_a_crash_runs_again_and_stores_once(tmp_path: Path) -> None:
    db = tmp_path / "psych.sqlite"
    store, memory = SQLiteStore(db), SQLiteUserMemory(db)
    await store.migrate()
    await memory.migrate()
    scoped = store.scoped(ALICE)
    try:
        run_id = await dispatch(scoped, SPEC, "I take my tea without sugar")
        first = start_worker(WORKER, str(db), "after_tool_returned")
        deadline = time.monotonic() + 60
        while first.poll() is None:
            assert time.monotonic() < deadline, "worker A did not reach its fault point"
            await asyncio.sleep(0.05)
        assert first.returncode == -9, "A died by SIGKILL at the fault point"
        (stored,) = await memory.recall(ALICE.tenant, "alice")
        cut = await scoped.read(run_id)
        call_id = next(b.call_id for b in (r.body for r in cut) if isinstance(b, ToolCallStarted))
        assert about(cut, ToolCallFinished, call_id) == [], "A recorded no finish"

        second = start_worker(WORKER, str(db))
        try:
            row = await ended(store, ALICE, run_id, second)
        finally:
            stop(second)
        records = await scoped.read(run_id)
        facts = await memory.recall(ALICE.tenant, "alice")
    finally:
        await memory.close()
        await store.close()

    assert row.status == "completed", records[-1].body
    assert [r.attempt for r in records if isinstance(r.body, AttemptStarted)] == [1, 2]
    starts = about(records, ToolCallStarted, call_id)
    assert [r.attempt for r, _ in starts] == [1, 2], "B started the call again"
    assert starts[0][1].safe_to_retry is True, "A's start recorded that it may run again"
    ((ran_again, finished),) = about(records, ToolCallFinished, call_id)
    assert ran_again.attempt == 2, "B ran the call again and recorded its finish"
    assert finished.result == {"fact_id": stored.id}
    assert facts == [stored], "stored once"
    assert (stored.text, stored.key, stored.run_id) == (FACT, f"{run_id}:{call_id}", run_id)
    last = [r.body for r in records if isinstance(r.body, ModelCallFinished)][-1]
    assert last.recalled == (stored.id,)
