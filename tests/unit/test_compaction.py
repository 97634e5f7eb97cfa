"""Compaction (`AgentSpec.compaction`): past a size the provider measured, older turns are
summarised, the next requests carry the summary and the recent turns, and the log keeps
every original record."""

from __future__ import annotations

from decimal import Decimal

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, Cost, ModelRef, Scope, Usage
from psych_runtime.conversations import Compaction, thread
from psych_runtime.errors import ModelError
from psych_runtime.ports import UserMessage
from psych_runtime.records import CompactionFailed, ConversationCompacted, ModelCallFinished
from psych_runtime.testing.fake_model import FakeModel
from tests.unit._conversation import texts

SCOPE = Scope(tenant="acme")
POLICY = Compaction(threshold_tokens=100, keep_turns=1, model=ModelRef(model="cheap"))
SPEC = AgentSpec(
    name="chat", model=ModelRef(model="big"), tools=(CodeTool(name="lookup"),), compaction=POLICY
)
PREFIX = "Summary of the conversation so far (earlier messages were compacted):\n\n"


async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_a_thread_past_the_threshold_is_summarised_and_the_log_keeps_everything() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("lookup", {"key": "plan"})], usage=Usage(input=40, output=10))
        .turn(text="Your plan is gold.", usage=Usage(input=60, output=50))
        .turn(
            text="Ann asked about her plan: gold.",
            usage=Usage(input=30, output=8),
            cost=Cost(amount=Decimal("0.001"), source="provider"),
        )
        .turn(text="Gold includes support.", usage=Usage(input=20, output=5))
    )
    async with psych_runtime.session(model, scope=SCOPE, tools=[lookup]) as s:
        first = await s.ask(SPEC, "What is my plan?")
        second = await s.ask(SPEC, "What does it include?", continues=first.run_id)
        log = await psych_runtime.read_log(s.store, second.run_id)
        report = await psych_runtime.report(s.store, second.run_id)
        whole = await thread(s.store, second.run_id)
    summarising, after = model.requests[2], model.requests[3]
    assert summarising.model.model == "cheap" and summarising.tools == ()
    (asked,) = summarising.messages
    assert isinstance(asked, UserMessage)
    assert "USER: What is my plan?" in asked.text
    assert 'ASSISTANT calls lookup({"key": "plan"})' in asked.text
    assert "TOOL RESULT (lookup): value of plan" in asked.text
    assert "ASSISTANT: Your plan is gold." in asked.text
    assert texts(after.messages) == [
        ("user", PREFIX + "Ann asked about her plan: gold."),
        ("user", "What does it include?"),
    ]
    assert len(after.messages) < len(texts(model.requests[1].messages)) + 1
    (compacted,) = [r.body for r in log if isinstance(r.body, ConversationCompacted)]
    assert compacted.tokens == 110 and compacted.kept_from == 4 and compacted.model == "cheap"
    assert report.compactions == 1 and report.model_calls == 1
    assert report.totals.usage == Usage(input=50, output=13)
    assert report.totals.cost is None  # the answer was unpriced: never a made-up total
    assert report.totals.unpriced_calls == 1
    # The thread still reads every original message of the first run.
    assert texts([m.message for m in whole.messages]) == [
        ("user", "What is my plan?"),
        ("assistant", None),
        ("tool", "value of plan"),
        ("assistant", "Your plan is gold."),
        ("user", "What does it include?"),
        ("assistant", "Gold includes support."),
    ]


async def test_one_long_turn_is_never_cut_between_a_call_and_its_result() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("lookup", {"key": "a"})], usage=Usage(input=500, output=10))
        .turn(tool_calls=[("lookup", {"key": "b"})], usage=Usage(input=600, output=10))
        .turn(text="a and b.", usage=Usage(input=700, output=10))
    )
    async with psych_runtime.session(model, scope=SCOPE, tools=[lookup]) as s:
        done = await s.ask(SPEC, "look up a and b")
        log = await psych_runtime.read_log(s.store, done.run_id)
    assert done.status == "completed"
    assert not [r for r in log if isinstance(r.body, ConversationCompacted)]
    assert texts(model.requests[2].messages) == [
        ("user", "look up a and b"),
        ("assistant", None),
        ("tool", "value of a"),
        ("assistant", None),
        ("tool", "value of b"),
    ]


async def test_a_usage_the_provider_did_not_report_never_triggers_a_compaction() -> None:
    model = FakeModel().turn(text="Hello.").turn(text="Again.")
    async with psych_runtime.session(model, scope=SCOPE, tools=[lookup]) as s:
        first = await s.ask(SPEC, "hi")
        second = await s.ask(SPEC, "hi again", continues=first.run_id)
        log = await psych_runtime.read_log(s.store, second.run_id)
    assert not [r for r in log if isinstance(r.body, ConversationCompacted)]
    assert model.remaining == 0 and len(model.requests) == 2


async def test_a_failed_summary_is_recorded_and_the_run_goes_on_with_everything() -> None:
    model = (
        FakeModel()
        .turn(text="Hello.", usage=Usage(input=90, output=20))
        .fail(ModelError("the summariser is down", model="cheap"))
        .turn(text="Still here.", usage=Usage(input=95, output=5))
    )
    async with psych_runtime.session(model, scope=SCOPE, tools=[lookup]) as s:
        first = await s.ask(SPEC, "hi")
        second = await s.ask(SPEC, "are you there?", continues=first.run_id)
        log = await psych_runtime.read_log(s.store, second.run_id)
        report = await psych_runtime.report(s.store, second.run_id)
    assert second.status == "completed" and second.text == "Still here."
    (failed,) = [r.body for r in log if isinstance(r.body, CompactionFailed)]
    assert failed.model == "cheap" and "the summariser is down" in failed.error
    assert failed.error.startswith(f"run {second.run_id}, seq ")
    assert texts(model.requests[2].messages) == [
        ("user", "hi"),
        ("assistant", "Hello."),
        ("user", "are you there?"),
    ]
    assert report.totals.failed_calls == 1 and report.compactions == 0
    assert next(r.body for r in log if isinstance(r.body, ModelCallFinished)).text == "Still here."
