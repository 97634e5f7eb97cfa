"""The agent loop through `session()`: model turns, tool calls, results, limits."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import threading
from typing import Any

import pytest
from pydantic import BaseModel

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, ToolContext
from psych_runtime.errors import ModelError, ToolNotRegistered
from psych_runtime.ports import ToolResultMessage
from psych_runtime.records import (
    ModelCallFailed,
    RunFailed,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
)
from psych_runtime.runtime import load_state
from psych_runtime.testing.fake_model import FakeModel


def make_spec(*tools: CodeTool, max_turns: int = 10, **extra: Any) -> AgentSpec:
    return AgentSpec(
        name="support",
        instructions="Help.",
        model=ModelRef(model="fake-standard"),
        tools=tools,
        max_turns=max_turns,
        **extra,
    )


async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}


async def test_several_tool_calls_in_one_turn_all_run_and_the_model_sees_each_result() -> None:
    model = (
        FakeModel()
        .turn(
            text="Checking both.",
            tool_calls=[("lookup_order", {"order_id": "A1"}), ("lookup_order", {"order_id": "B2"})],
        )
        .turn(text="Both shipped.")
    )
    async with psych_runtime.session(model, tools=[lookup_order]) as s:
        view = await s.ask(make_spec(CodeTool(name="lookup_order")), "where are A1 and B2?")
        report = await psych_runtime.report(s.store, view.run_id)
    assert view.status == "completed"
    assert view.text == "Both shipped."
    assert [(c.call_id, c.arguments, c.outcome) for c in report.tool_calls] == [
        ("2.0", {"order_id": "A1"}, "succeeded"),
        ("2.1", {"order_id": "B2"}, "succeeded"),
    ]
    assert report.tool_calls[1].result == {"order_id": "B2", "status": "shipped"}
    second = model.requests[1].messages
    results = [m for m in second if isinstance(m, ToolResultMessage)]
    assert sorted(r.call_id for r in results) == ["2.0", "2.1"]
    assert report.turns == 1 and report.model_calls == 2


async def test_one_append_carries_the_model_turn_and_the_starts_of_its_calls() -> None:
    model = (
        FakeModel()
        .turn(
            tool_calls=[("lookup_order", {"order_id": "A1"}), ("lookup_order", {"order_id": "B2"})]
        )
        .turn(text="Done.")
    )
    appended: list[list[str]] = []
    store = psych_runtime.MemoryStore()
    original = store.append

    async def spy(
        run_id: str, attempt: int, batch: psych_runtime.ports.Batch
    ) -> psych_runtime.ports.AppendResult:
        appended.append([r.body.type for r in batch.records])
        return await original(run_id, attempt, batch)

    store.append = spy  # type: ignore[method-assign]
    async with psych_runtime.session(model, tools=[lookup_order], store=store) as s:
        await s.ask(make_spec(CodeTool(name="lookup_order")), "?")
    assert appended[0] == ["model_call_finished", "tool_call_started", "tool_call_started"]
    assert appended[1:3] == [["tool_call_finished"], ["tool_call_finished"]]
    assert appended[3] == ["model_call_finished", "run_completed"]


async def test_a_tool_that_raises_is_recorded_as_failed_and_the_model_is_told() -> None:
    def refund(order_id: str) -> str:
        """Refund an order."""
        raise RuntimeError(f"payment provider refused {order_id}")

    model = FakeModel().turn(tool_calls=[("refund", {"order_id": "A1"})]).turn(text="Sorry.")
    async with psych_runtime.session(model, tools=[refund]) as s:
        view = await s.ask(make_spec(CodeTool(name="refund")), "refund A1")
        log = await psych_runtime.read_log(s.store, view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    failed = [r.body for r in log if isinstance(r.body, ToolCallFailed)]
    assert failed == [
        ToolCallFailed(
            call_id="2.0", reason="error", error="RuntimeError: payment provider refused A1"
        )
    ]
    told = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert told[0].is_error and "payment provider refused A1" in told[0].content
    assert report.tool_calls[0].outcome == "failed"
    assert view.status == "completed"


async def test_a_call_to_an_unknown_tool_is_answered_with_an_error_and_never_runs() -> None:
    model = FakeModel().turn(tool_calls=[("delete_everything", {})]).turn(text="I cannot.")
    async with psych_runtime.session(model, tools=[lookup_order]) as s:
        view = await s.ask(make_spec(CodeTool(name="lookup_order")), "?")
        log = await psych_runtime.read_log(s.store, view.run_id)
    types = [r.body.type for r in log]
    assert "tool_call_started" not in types
    failed = next(r.body for r in log if isinstance(r.body, ToolCallFailed))
    assert failed.reason == "unknown_tool"
    assert "'delete_everything'" in failed.error and "lookup_order" in failed.error
    assert view.status == "completed"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "order_id: Field required"),
        ({"order_id": 7}, "order_id: Input should be a valid string"),
        ({"order_id": "A1", "extra": 1}, "extra: Extra inputs are not permitted"),
        ('{"order_id": ', "arguments are not valid JSON"),
        ("[1, 2]", "arguments must be a JSON object"),
    ],
)
async def test_arguments_that_fail_validation_are_answered_with_the_problem(
    arguments: Any, problem: str
) -> None:
    ran: list[str] = []

    async def lookup(order_id: str) -> str:
        """Look up."""
        ran.append(order_id)
        return "ok"

    model = FakeModel().turn(tool_calls=[("lookup", arguments)]).turn(text="Let me retry.")
    async with psych_runtime.session(model, tools=[lookup]) as s:
        view = await s.ask(make_spec(CodeTool(name="lookup")), "?")
        report = await psych_runtime.report(s.store, view.run_id)
    assert ran == []
    call = report.tool_calls[0]
    assert call.outcome == "failed" and call.reason == "invalid_arguments"
    assert call.error is not None and problem in call.error
    assert "'lookup'" in call.error


async def test_max_turns_fails_the_run_with_an_error_naming_the_limit() -> None:
    model = FakeModel()
    for _ in range(3):
        model.turn(tool_calls=[("lookup_order", {"order_id": "A1"})])
    async with psych_runtime.session(model, tools=[lookup_order]) as s:
        view = await s.ask(make_spec(CodeTool(name="lookup_order"), max_turns=3), "loop")
        log = await psych_runtime.read_log(s.store, view.run_id)
        status = await psych_runtime.status(s.store, view.run_id)
    assert view.status == "failed"
    assert view.error is not None and "max_turns=3" in view.error and view.run_id in view.error
    assert isinstance(log[-1].body, RunFailed) and log[-1].body.reason == "max_turns"
    assert status.failure_reason == "max_turns" and status.model_calls == 3
    assert model.remaining == 0


async def test_a_sync_tool_runs_in_a_thread_and_gets_its_context() -> None:
    seen: dict[str, Any] = {}

    def ship(order_id: str, ctx: ToolContext, express: bool = False) -> str:
        """Ship an order."""
        seen["thread"] = threading.current_thread() is not threading.main_thread()
        seen["key"] = ctx.idempotency_key
        seen["attempt"] = ctx.attempt
        seen["express"] = express
        return f"shipped {order_id}"

    model = FakeModel().turn(tool_calls=[("ship", {"order_id": "A1"})]).turn(text="Shipped.")
    async with psych_runtime.session(model, tools=[ship]) as s:
        view = await s.ask(make_spec(CodeTool(name="ship")), "ship A1")
    assert seen == {"thread": True, "key": f"{view.run_id}:2.0", "attempt": 1, "express": False}
    definition = model.requests[0].tools[0]
    assert definition.name == "ship" and definition.description == "Ship an order."
    assert set(definition.parameters["properties"]) == {"order_id", "express"}  # type: ignore[arg-type]
    assert definition.parameters["required"] == ["order_id"]


async def test_a_slow_sync_tool_does_not_block_the_event_loop() -> None:
    ticks = 0

    def slow(seconds: float) -> str:
        """Sleep."""
        import time

        time.sleep(seconds)
        return "rested"

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    model = FakeModel().turn(tool_calls=[("slow", {"seconds": 0.3})]).turn(text="ok")
    task = asyncio.create_task(ticker())
    async with psych_runtime.session(model, tools=[slow]) as s:
        await s.ask(make_spec(CodeTool(name="slow")), "?")
    task.cancel()
    assert ticks >= 10


async def test_a_timeout_fails_a_safe_tool_and_settles_an_unsafe_one_unknown() -> None:
    async def wait_long() -> str:
        """Wait."""
        await asyncio.sleep(30)
        return "late"

    async def charge() -> str:
        """Charge."""
        await asyncio.sleep(30)
        return "late"

    model = FakeModel().turn(tool_calls=[("wait_long", {}), ("charge", {})]).turn(text="ok")
    spec = make_spec(
        CodeTool(name="wait_long", safe_to_retry=True, timeout=0.1),
        CodeTool(name="charge", timeout=0.1),
    )
    async with psych_runtime.session(model, tools=[wait_long, charge]) as s:
        view = await s.ask(spec, "?")
        log = await psych_runtime.read_log(s.store, view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    bodies = {type(r.body) for r in log}
    assert ToolCallSettled in bodies and ToolCallFailed in bodies
    outcomes = {c.name: (c.outcome, c.reason) for c in report.tool_calls}
    assert outcomes == {"wait_long": ("failed", "timeout"), "charge": ("unknown", None)}


async def test_a_result_that_is_not_json_serialisable_is_a_readable_failure() -> None:
    async def opaque() -> object:
        """Return something odd."""
        return object()

    model = FakeModel().turn(tool_calls=[("opaque", {})]).turn(text="ok")
    async with psych_runtime.session(model, tools=[opaque]) as s:
        view = await s.ask(make_spec(CodeTool(name="opaque")), "?")
        report = await psych_runtime.report(s.store, view.run_id)
    assert report.tool_calls[0].error is not None
    assert "not JSON-serialisable" in report.tool_calls[0].error


async def test_pydantic_results_are_recorded_as_json() -> None:
    class Order(BaseModel):
        id: str
        total: float

    async def get_order(order_id: str) -> Order:
        """Get an order."""
        return Order(id=order_id, total=9.5)

    model = FakeModel().turn(tool_calls=[("get_order", {"order_id": "A1"})]).turn(text="ok")
    async with psych_runtime.session(model, tools=[get_order]) as s:
        view = await s.ask(make_spec(CodeTool(name="get_order")), "?")
        log = await psych_runtime.read_log(s.store, view.run_id)
    finished = next(r.body for r in log if isinstance(r.body, ToolCallFinished))
    assert finished.result == {"id": "A1", "total": 9.5}


async def test_a_result_is_recorded_as_the_json_the_model_was_told_and_read_back() -> None:
    # Converted once (`json_result`) and recorded without a second validation: what the
    # attempt folded is what the log reads back, tuples and dates made JSON alike.
    @dataclasses.dataclass
    class Slot:
        day: dt.date
        hours: tuple[int, ...]

    async def free_slots() -> list[Slot]:
        """Free slots."""
        return [Slot(dt.date(2026, 12, 6), (9, 10)), Slot(dt.date(2026, 12, 7), ())]

    model = FakeModel().turn(tool_calls=[("free_slots", {})]).turn(text="ok")
    async with psych_runtime.session(model, tools=[free_slots]) as s:
        view = await s.ask(make_spec(CodeTool(name="free_slots")), "?")
        log = await psych_runtime.read_log(s.store, view.run_id)
    expected = [{"day": "2026-12-06", "hours": [9, 10]}, {"day": "2026-12-07", "hours": []}]
    finished = next(r.body for r in log if isinstance(r.body, ToolCallFinished))
    assert finished.result == expected
    told = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [json.loads(m.content) for m in told] == [expected]
    assert view.status == "completed"


async def test_a_run_read_back_from_its_log_tells_the_model_what_it_was_told_live() -> None:
    # A NaN is kept as null in the record; the model is told null live too, so a run resumed
    # from its log (which folds what the store kept) sends the same conversation.
    async def measure() -> dict[str, object]:
        """Measure."""
        return {"ratio": float("nan"), "rows": [{"n": 1, "name": "naïve ☃"}]}

    model = FakeModel().turn(tool_calls=[("measure", {})]).turn(text="ok")
    async with psych_runtime.session(model, tools=[measure]) as s:
        view = await s.ask(make_spec(CodeTool(name="measure")), "?")
        state = await load_state(s.store.store, view.run_id)
    live = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    read_back = [m for m in state.request_messages() if isinstance(m, ToolResultMessage)]
    assert live == read_back
    assert live[0].content == '{"ratio":null,"rows":[{"n":1,"name":"naïve ☃"}]}'


async def test_a_model_error_fails_the_run_and_records_the_failure() -> None:
    model = FakeModel().fail(ModelError("upstream said no", model="fake-standard", status=400))
    async with psych_runtime.session(model) as s:
        view = await s.ask(make_spec(), "hi")
        log = await psych_runtime.read_log(s.store, view.run_id)
    failed = next(r.body for r in log if isinstance(r.body, ModelCallFailed))
    assert failed.status == 400 and failed.error == "upstream said no"
    assert view.status == "failed"
    assert view.error is not None and "model 'fake-standard' failed: upstream said no" in view.error


async def test_a_model_with_no_scripted_turn_left_says_so() -> None:
    async with psych_runtime.session(FakeModel()) as s:
        view = await s.ask(make_spec(), "hi")
    assert view.error is not None and "FakeModel has no scripted turn left" in view.error


async def test_structured_output_is_parsed_and_bad_json_fails_clearly() -> None:
    class Answer(BaseModel):
        city: str

    spec = make_spec(output_type=Answer)
    model = FakeModel().turn(text='{"city": "Oslo"}')
    async with psych_runtime.session(model) as s:
        view = await s.ask(spec, "capital of Norway?")
        report = await psych_runtime.report(s.store, view.run_id)
    assert view.output == {"city": "Oslo"} and report.output == {"city": "Oslo"}
    assert model.requests[0].output_schema == Answer.model_json_schema()
    no_retry = spec.model_copy(update={"output_retries": 0})
    async with psych_runtime.session(FakeModel().turn(text="Oslo")) as s:
        view = await s.ask(no_retry, "capital of Norway?")
    assert view.status == "failed"
    assert view.error is not None and "not valid JSON" in view.error


async def test_a_spec_naming_an_unregistered_tool_is_refused_before_anything_is_saved() -> None:
    store = psych_runtime.MemoryStore()
    async with psych_runtime.session(FakeModel(), store=store) as s:
        with pytest.raises(ToolNotRegistered, match=r"names tool 'lookup_order'.*tools=\[\.\.\.\]"):
            await s.ask(make_spec(CodeTool(name="lookup_order")), "?")
        assert (await s.store.list_runs()).items == ()


async def test_the_same_idempotency_key_returns_the_same_run() -> None:
    model = FakeModel().turn(text="Hello!")
    async with psych_runtime.session(model) as s:
        first = await s.ask(make_spec(), "hi", idempotency_key="k1")
        again = await s.ask(make_spec(), "hi", idempotency_key="k1")
        with pytest.raises(psych_runtime.errors.IdempotencyConflict, match="'k1'"):
            await s.ask(make_spec(), "something else", idempotency_key="k1")
    assert again.run_id == first.run_id and again.text == "Hello!"
    assert model.remaining == 0 and len(model.requests) == 1
