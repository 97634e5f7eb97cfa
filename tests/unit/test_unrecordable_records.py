"""Records no store can keep become records the run can go on from, never errors out of `ask`.

(Every store, at its real limits: tests/integration/test_store_limits_in_runs.py.)
"""

from __future__ import annotations

import pytest

from psych_runtime import AgentSpec, CodeTool, ModelRef, read_log, report, session
from psych_runtime.records import RunFailed, ToolCallFailed
from psych_runtime.testing.fake_model import FakeModel

SPEC = AgentSpec(name="odd", model=ModelRef(model="fake"), tools=(CodeTool(name="odd"),))


def odd() -> dict[str, str]:
    """Return text that is not valid Unicode, inside a structure."""
    return {"note": "half an emoji: \ud83d"}


async def test_a_result_with_a_lone_surrogate_fails_the_call_in_the_default_session() -> None:
    model = FakeModel().turn(tool_calls=[("odd", {})]).turn(text="it broke")
    async with session(model, tools=[odd]) as s:
        view = await s.ask(SPEC, "go")
        records = await read_log(s.store, view.run_id)
        done = await report(s.store, view.run_id)
    assert view.status == "completed"
    assert view.text == "it broke"
    failed = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert [f.reason for f in failed] == ["invalid_result"]
    assert failed[0].error.startswith(f"run {view.run_id}, seq ")
    assert "return valid Unicode text" in failed[0].error
    assert [call.outcome for call in done.tool_calls] == ["failed"]


async def test_a_model_reply_that_cannot_be_recorded_fails_the_run_saying_why() -> None:
    model = FakeModel().turn(text="a reply with \udcff in it", tool_calls=[("odd", {})])
    async with session(model, tools=[odd]) as s:
        view = await s.ask(SPEC, "go")
        records = await read_log(s.store, view.run_id)
    assert view.status == "failed"
    assert [r.seq for r in records] == list(range(len(records)))
    last = records[-1].body
    assert isinstance(last, RunFailed)
    assert last.reason == "unrecordable_reply"
    assert "model 'fake'" in last.error and "lone surrogate" in last.error
    # Nothing the reply asked for was recorded, so nothing ran.
    assert not [r for r in records if r.body.type == "tool_call_started"]


@pytest.mark.parametrize("count", [1, 3])
async def test_results_over_the_record_limit_fail_their_calls_alone(count: int) -> None:
    from psych_runtime import MemoryStore

    store = MemoryStore()
    limit = store.limits.max_record_bytes

    def big(n: int) -> str:
        """Return a text over the store's limit for odd n."""
        return "x" * (limit + 1) if n % 2 else f"small {n}"

    spec = AgentSpec(name="big", model=ModelRef(model="fake"), tools=(CodeTool(name="big"),))
    calls = [("big", {"n": n}) for n in range(count)]
    model = FakeModel().turn(tool_calls=calls).turn(text="done")
    async with session(model, tools=[big], store=store) as s:
        view = await s.ask(spec, "go")
        done = await report(s.store, view.run_id)
    assert view.status == "completed"
    outcomes = {_n(call.arguments): call.outcome for call in done.tool_calls}
    assert outcomes == {n: ("failed" if n % 2 else "succeeded") for n in range(count)}


def _n(arguments: object) -> int:
    assert isinstance(arguments, dict)
    n = arguments["n"]
    assert isinstance(n, int)
    return n
