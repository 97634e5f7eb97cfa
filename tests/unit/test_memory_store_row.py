"""`MemoryStore` keeps each run row mutable, changed in place by appends, and hands out
`RunRow` values: a row read once does not change when the run moves on."""

from __future__ import annotations

import dataclasses
import datetime as dt
import typing

from psych_runtime import AgentSpec, MemoryStore, ModelRef, Scope, dispatch
from psych_runtime.adapters._memory_store import _Row
from psych_runtime.ports import Batch, RunIndex, RunRow
from psych_runtime.records import Record, ToolCallFinished

HOME = Scope(tenant="acme")
SPEC = AgentSpec(name="rows", model=ModelRef(model="fake"))


def test_the_kept_row_has_run_rows_fields_in_its_order() -> None:
    kept = [(field.name, field.default) for field in dataclasses.fields(_Row)]
    port = [(field.name, field.default) for field in dataclasses.fields(RunRow)]
    assert kept == port
    assert typing.get_type_hints(_Row) == typing.get_type_hints(RunRow)


async def test_a_row_handed_out_is_a_value_the_next_append_leaves_alone() -> None:
    store = MemoryStore()
    run_id = await dispatch(store.scoped(HOME), SPEC, "hello")
    claim = await store.claim("w1", dt.timedelta(minutes=1), run_id=run_id)
    assert claim is not None
    before = await store.get_run("acme", run_id)
    assert isinstance(before, RunRow)
    assert (before.status, before.next_seq) == ("running", 2)
    record = Record(
        run_id=run_id,
        seq=2,
        attempt=claim.attempt,
        at=dt.datetime.now(dt.UTC),
        body=ToolCallFinished(call_id="1.0", result=1),
    )
    await store.append(run_id, claim.attempt, Batch((record,), "b2", RunIndex(status="running")))
    after = await store.get_run("acme", run_id)
    assert after is not None
    assert (before.status, before.next_seq) == ("running", 2)
    assert after.next_seq == 3
    assert after.updated_at >= before.updated_at
