"""A log with a hole (records cut out of a real SQLite file, as a torn write would leave it)
fails its run at the first claim, naming the run and the missing seq; `status()` answers and
`psych inspect`'s reader, `report()`, raises the typed `CorruptLog`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, Leases, ModelRef, Runtime, Scope, Worker, dispatch
from psych_runtime.errors import CorruptLog
from psych_runtime.testing.fake_model import FakeModel
from psych_store_sqlite import SQLiteStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

SCOPE = Scope(tenant="acme")


def lookup(order: str) -> str:
    """Look up an order."""
    return f"{order} shipped"


async def test_a_log_with_a_hole_fails_its_run_once_naming_the_missing_seq(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    await store.migrate()
    spec = AgentSpec(name="s", model=ModelRef(model="fake"), tools=(CodeTool(name="lookup"),))
    scoped = store.scoped(SCOPE)
    run_id = await dispatch(scoped, spec, "where is A1?")
    # The first attempt stops waiting for nothing: it runs the tool and answers.
    model = FakeModel().turn(tool_calls=[("lookup", {"order": "A1"})]).turn(text="shipped")
    await Worker(store, Runtime(model=model, tools=[lookup])).run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"
    # Put the run back in play with seqs 3 and 4 cut out, as a torn append would leave it.
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM psych_records WHERE run_id = ? AND seq IN (3, 4)", (run_id,))
        db.execute(
            "UPDATE psych_runs SET status = 'queued', runnable_at = 0, lease_owner = NULL "
            "WHERE run_id = ?",
            (run_id,),
        )
        db.execute(
            "DELETE FROM psych_records WHERE run_id = ? AND seq = "
            "(SELECT MAX(seq) FROM psych_records WHERE run_id = ?)",
            (run_id, run_id),
        )
    before = await psych_runtime.status(scoped, run_id)
    assert before.status == "failed" and before.failure_reason == "corrupt_log"
    assert before.error == f"run {run_id}, seq 5: the log is corrupt: seqs 3 to 4 are missing"

    await Worker(
        store, Runtime(model=FakeModel(), tools=[lookup], leases=Leases(max_attempts=10))
    ).run_until_idle()
    row = await store.get_run(SCOPE.tenant, run_id)
    assert row is not None and row.status == "failed" and row.runnable_at is None
    log = await psych_runtime.read_log(scoped, run_id)
    last = log[-1].body
    assert last.type == "run_failed" and last.reason == "corrupt_log"
    assert "seq 5" in last.error and run_id in last.error
    after = await psych_runtime.status(scoped, run_id)
    assert after.status == "failed" and after.last_seq == log[-1].seq
    with pytest.raises(CorruptLog, match=f"run {run_id}, seq 5"):
        await psych_runtime.report(scoped, run_id)
    await store.close()
