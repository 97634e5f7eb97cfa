"""Runs that meet a store's declared limits, on every store.

A model turn asking for 100 tool calls needs more records than DynamoDB takes in one append
(64): the turn is recorded in several appends, every start committed before any call runs. A
tool result over the store's record limit, with no BlobStore to keep it, becomes a recorded
failed call the model reads, and the run goes on; so does a result holding a lone surrogate,
which cannot be written as JSON text at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope, read_log, report, session
from psych_runtime.records import ToolCallFailed
from psych_runtime.testing.fake_model import FakeModel
from tests.integration._every_store import KINDS, fresh_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SCOPE = Scope(tenant="limits")


def _spec(*tools: str) -> AgentSpec:
    return AgentSpec(
        name="limits",
        model=ModelRef(model="fake"),
        tools=tuple(CodeTool(name=name) for name in tools),
    )


@pytest.mark.parametrize("kind", KINDS)
async def test_a_turn_of_100_tool_calls_is_recorded_within_the_stores_limits(
    kind: str, tmp_path: Path
) -> None:
    ran: list[int] = []
    started_before_any_ran: list[int] = []

    def count(n: int) -> int:
        """Count one."""
        if not ran:
            started_before_any_ran.append(n)
        ran.append(n)
        return n

    calls = [("count", {"n": n}) for n in range(100)]
    model = FakeModel().turn(tool_calls=calls).turn(text="counted")
    async with fresh_store(kind, tmp_path) as store:
        limit = store.limits.max_append_records
        async with session(model, tools=[count], store=store, scope=SCOPE) as s:
            view = await s.ask(_spec("count"), "count to 100")
            records = await read_log(s.store, view.run_id)
            done = await report(s.store, view.run_id)
    assert view.status == "completed", view
    assert sorted(ran) == list(range(100))
    assert [r.seq for r in records] == list(range(len(records)))
    assert len(done.tool_calls) == 100
    assert all(call.outcome == "succeeded" for call in done.tool_calls)
    # Every start was committed before the first call ran: the log has all 100 starts
    # before the first finish.
    types = [r.body.type for r in records]
    first_finish = types.index("tool_call_finished")
    assert types[:first_finish].count("tool_call_started") == 100
    if limit < 101:
        assert kind == "dynamodb"
        starts_seqs = [r.seq for r in records if r.body.type == "tool_call_started"]
        assert starts_seqs == list(range(starts_seqs[0], starts_seqs[0] + 100))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_result_over_the_record_limit_is_a_failed_call_and_the_run_goes_on(
    kind: str, tmp_path: Path
) -> None:
    async with fresh_store(kind, tmp_path) as store:
        size = store.limits.max_record_bytes + 1024

        def dump() -> str:
            """Return a very large text."""
            return "x" * size

        model = FakeModel().turn(tool_calls=[("dump", {})]).turn(text="too big, sorry")
        async with session(model, tools=[dump], store=store, scope=SCOPE) as s:
            view = await s.ask(_spec("dump"), "dump it")
            records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    assert view.text == "too big, sorry"
    failed = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert len(failed) == 1
    assert failed[0].reason == "result_too_large"
    assert f"over the store's limit of {store.limits.max_record_bytes} bytes" in failed[0].error
    assert "BlobStore" in failed[0].error
    # The model was told: its second request carries the failure as the call's result.
    shown = model.requests[1].messages[-1]
    assert "was not recorded" in str(shown)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_result_with_a_lone_surrogate_is_a_failed_call_and_the_run_goes_on(
    kind: str, tmp_path: Path
) -> None:
    def broken() -> str:
        """Return text that is not valid Unicode."""
        return "half an emoji: \ud83d"

    model = FakeModel().turn(tool_calls=[("broken", {})]).turn(text="that failed")
    async with (
        fresh_store(kind, tmp_path) as store,
        session(model, tools=[broken], store=store, scope=SCOPE) as s,
    ):
        view = await s.ask(_spec("broken"), "go")
        records = await read_log(s.store, view.run_id)
    assert view.status == "completed"
    failed = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert [f.reason for f in failed] == ["invalid_result"]
    assert "lone surrogate" in failed[0].error
