"""A corrupt log fails its run at once, naming the run and the seq; a log from a newer
psych-core is handed to another worker. `status()` answers for both; `report()` raises.

(A log with a gap, cut out of a real SQLite file: tests/integration/test_corrupt_log_sqlite.py.)
"""

from __future__ import annotations

import datetime as dt

import pytest

import psych_runtime
from psych_runtime import AgentSpec, Leases, MemoryStore, ModelRef, Runtime, Scope, Worker, dispatch
from psych_runtime.errors import CorruptLog
from psych_runtime.ports import Batch, NewRun, RunIndex
from psych_runtime.records import Record, RunAdmitted, ToolCallFinished
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="support", model=ModelRef(model="fake"))
TTL = dt.timedelta(seconds=30)


async def _contradictory_run(store: MemoryStore) -> str:
    """A run whose seq 2 finishes a call that never started (no worker writes that)."""
    run_id = await dispatch(store.scoped(SCOPE), SPEC, "hi")
    claim = await store.claim("forger", TTL)
    assert claim is not None
    forged = Record(
        run_id=run_id,
        seq=2,
        attempt=claim.attempt,
        at=dt.datetime.now(dt.UTC),
        body=ToolCallFinished(call_id="7.0", result="forged"),
    )
    batch = Batch(records=(forged,), batch_id="forged", index=RunIndex(status="running"))
    await store.append(run_id, claim.attempt, batch)
    await store.release(run_id, claim.attempt)
    return run_id


async def test_a_worker_fails_a_corrupt_run_at_its_first_claim() -> None:
    store = MemoryStore()
    run_id = await _contradictory_run(store)
    model = FakeModel()
    await Worker(store, Runtime(model=model, leases=Leases(max_attempts=10))).run_until_idle()
    scoped = store.scoped(SCOPE)
    status = await psych_runtime.status(scoped, run_id)
    assert status.status == "failed"
    assert status.failure_reason == "corrupt_log"
    assert status.error is not None
    assert status.error.startswith(f"run {run_id}, seq 2: the log is corrupt:")
    assert "unknown call 7.0" in status.error
    row = await store.get_run(SCOPE.tenant, run_id)
    assert row is not None and row.status == "failed" and row.claims == 2
    assert model.requests == [], "nothing is run for a corrupt log"
    log = await psych_runtime.read_log(scoped, run_id)
    assert [r.body.type for r in log] == [
        "run_admitted",
        "attempt_started",
        "tool_call_finished",
        "attempt_started",
        "run_failed",
    ]
    with pytest.raises(CorruptLog) as raised:
        await psych_runtime.report(scoped, run_id)
    assert raised.value.run_id == run_id and raised.value.seq == 2


async def test_status_answers_for_a_corrupt_log_no_worker_has_seen() -> None:
    store = MemoryStore()
    run_id = await _contradictory_run(store)
    status = await psych_runtime.status(store.scoped(SCOPE), run_id)
    assert status.status == "failed" and status.failure_reason == "corrupt_log"
    assert status.last_seq == 2


async def test_a_log_from_a_newer_psych_core_is_released_for_another_worker() -> None:
    now = [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]
    store = MemoryStore(clock=lambda: now[0])
    await store.put_spec(SPEC.version, SPEC.canonical_json())
    first = Record(
        run_id="newer",
        seq=0,
        attempt=0,
        at=now[0],
        body=RunAdmitted(
            agent=SPEC.name, spec_version=SPEC.version, input="hi", scope=SCOPE, schema_version=99
        ),
    )
    await store.create_run(
        NewRun(run_id="newer", tenant="acme", agent=SPEC.name, spec_version=SPEC.version), first
    )

    class Fixed:
        def now(self) -> dt.datetime:
            return now[0]

    await Worker(store, Runtime(model=FakeModel(), clock=Fixed())).run_until_idle()
    row = await store.get_run("acme", "newer")
    assert row is not None and row.status == "queued", "released, never failed"
    assert row.runnable_at is not None and row.runnable_at > now[0]
