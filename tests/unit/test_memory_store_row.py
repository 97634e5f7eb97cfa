"""`MemoryStore` keeps each run row mutable, changed in place by appends, and hands out
`RunRow` values: a row read once does not change when the run moves on."""

from __future__ import annotations

import dataclasses
import datetime as dt
import typing

from psych_runtime import AgentSpec, MemoryStore, ModelRef, Scope, dispatch
from psych_runtime.adapters._memory_store import _Row
from psych_runtime.ports import Batch, NewRun, RunIndex, RunRow
from psych_runtime.records import Record, RunAdmitted, ToolCallFinished

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
    record = _finished(run_id, claim.attempt)
    await store.append(run_id, claim.attempt, Batch((record,), "b2", RunIndex(status="running")))
    after = await store.get_run("acme", run_id)
    assert after is not None
    assert (before.status, before.next_seq) == ("running", 2)
    assert after.next_seq == 3
    assert after.updated_at >= before.updated_at


async def test_a_claim_looks_only_at_runs_that_have_not_ended() -> None:
    store = MemoryStore()
    scoped = store.scoped(HOME)
    lease = dt.timedelta(minutes=1)
    first, second, third = [await dispatch(scoped, SPEC, f"run {n}") for n in range(3)]
    claim = await store.claim("w1", lease, run_id=first)
    assert claim is not None
    ended = _finished(first, claim.attempt)
    await store.append(first, claim.attempt, Batch((ended,), "b2", RunIndex(status="failed")))
    assert await store.delete_run("acme", second)
    # The deleted run's id admitted again is a new run, claimable like any other.
    again = await store.create_run(*_new_run_like(second))
    assert again == (second, True)
    taken = [await store.claim("w2", lease) for _ in range(3)]
    assert [claim.run_id if claim else None for claim in taken] == [third, second, None]
    assert set(store._open) == {second, third}, "the ended and the deleted run are dropped"


def _new_run_like(run_id: str) -> tuple[NewRun, Record]:
    row = RunAdmitted(agent="rows", spec_version="sha256:x", input="again", scope=HOME)
    first = Record(run_id=run_id, seq=0, attempt=0, at=dt.datetime.now(dt.UTC), body=row)
    new = NewRun(run_id=run_id, tenant="acme", agent="rows", spec_version="sha256:x")
    return new, first


def _finished(run_id: str, attempt: int) -> Record:
    """The record at seq 2 of a claimed run: a tool call's result."""
    body = ToolCallFinished(call_id="1.0", result=1)
    return Record(run_id=run_id, seq=2, attempt=attempt, at=dt.datetime.now(dt.UTC), body=body)
