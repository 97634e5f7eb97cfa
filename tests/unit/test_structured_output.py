"""Structured output: an answer that is not JSON, or breaks `output_type`, is sent back."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import psych_runtime
from psych_core import (
    OUTPUT_KEYWORDS,
    CallModel,
    Fail,
    RejectOutput,
    RunState,
    fold,
    fold_all,
    next_action,
    schema_problems,
    validation_errors,
)
from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope
from psych_runtime.errors import FoldError, OutputUnavailable
from psych_runtime.ports import UserMessage
from psych_runtime.records import (
    AttemptStarted,
    ModelCallFinished,
    OutputRejected,
    Record,
    RunAdmitted,
    RunFailed,
    SignalReceived,
    UserInput,
)
from psych_runtime.testing.fake_model import FakeModel

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Verdict(BaseModel):
    approved: bool
    reason: str


def make_spec(**extra: Any) -> AgentSpec:
    fields: dict[str, Any] = {"output_type": Verdict, **extra}
    return AgentSpec(name="reviewer", model=ModelRef(model="fake"), **fields)


async def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: arrived broken"


async def ask(
    model: FakeModel, spec: AgentSpec, tools: list[Any] | None = None
) -> tuple[psych_runtime.RunView, list[Record], psych_runtime.Report]:
    async with psych_runtime.session(model, tools=tools or []) as s:
        view = await s.ask(spec, "Refund order A1?")
        log = await psych_runtime.read_log(s.store, view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    return view, log, report


def bodies[B](log: list[Record], kind: type[B]) -> list[B]:
    return [record.body for record in log if isinstance(record.body, kind)]


async def test_an_answer_that_is_not_json_is_sent_back_and_the_next_one_completes() -> None:
    model = (
        FakeModel()
        .turn(text="Approved: it arrived broken.")
        .turn(text='{"approved": true, "reason": "arrived broken"}')
    )
    view, log, report = await ask(model, make_spec())
    assert view.status == "completed"
    assert view.output == {"approved": True, "reason": "arrived broken"}
    # Both answers are in the log, and the first one's rejection between them.
    answers = [(r.seq, r.body.text) for r in log if isinstance(r.body, ModelCallFinished)]
    assert [text for _, text in answers] == [
        "Approved: it arrived broken.",
        '{"approved": true, "reason": "arrived broken"}',
    ]
    [rejected] = bodies(log, OutputRejected)
    assert rejected.answer_seq == answers[0][0] and rejected.try_number == 1
    assert rejected.error.startswith("the answer is not valid JSON (Expecting value")
    # The model was told exactly that, after its own answer, before it answered again.
    second = model.requests[1].messages
    assert isinstance(second[-1], UserMessage)
    assert rejected.error in second[-1].text and "Reply again" in second[-1].text
    assert second[-2].role == "assistant"
    assert report.model_calls == 2
    assert [(r.seq, r.try_number, r.text) for r in report.rejected_outputs] == [
        (answers[0][0], 1, "Approved: it arrived broken.")
    ]


async def test_schema_violations_are_named_by_path_until_the_answer_fits() -> None:
    model = (
        FakeModel()
        .turn(text='{"approved": "yes", "reason": "broken"}')
        .turn(text='{"approved": true}')
        .turn(text='{"approved": true, "reason": "broken"}')
    )
    view, log, report = await ask(model, make_spec())
    assert view.status == "completed" and view.output_as(Verdict).reason == "broken"
    errors = [body.error for body in bodies(log, OutputRejected)]
    assert errors == [
        "the answer does not match the output schema: approved: expected boolean, got string",
        "the answer does not match the output schema: reason: required",
    ]
    assert [r.try_number for r in report.rejected_outputs] == [1, 2]
    told = [m.text for m in model.requests[2].messages if isinstance(m, UserMessage)]
    assert len(told) == 3 and errors[0] in told[1] and errors[1] in told[2]


async def test_an_answer_that_never_fits_fails_after_output_retries_plus_one_answers() -> None:
    model = FakeModel()
    for text in ("nope", '{"approved": 1}', "[]", "never used"):
        model.turn(text=text)
    view, log, report = await ask(model, make_spec())
    assert view.status == "failed"
    assert model.remaining == 1 and len(model.requests) == 3  # output_retries=2: 3 answers
    answer_seqs = [r.seq for r in log if isinstance(r.body, ModelCallFinished)]
    rejected = bodies(log, OutputRejected)
    assert [r.answer_seq for r in rejected] == answer_seqs
    assert [r.try_number for r in rejected] == [1, 2, 3]
    [failed] = bodies(log, RunFailed)
    assert failed.reason == "invalid_output" and report.failure_reason == "invalid_output"
    error = view.error or ""
    assert error.startswith(f"run {view.run_id}: AgentSpec 'reviewer' asks for structured output")
    assert "rejected 3 times; output_retries=2 allows no further try" in error
    for seq, body in zip(answer_seqs, rejected, strict=True):
        assert f"seq {seq}: {body.error}" in error
    assert "the answer: expected object, got array" in error
    assert "raise output_retries" in error
    assert len(report.rejected_outputs) == 3
    with pytest.raises(
        OutputUnavailable, match=rf"run {view.run_id}: it is failed, so it has no output"
    ):
        view.output_as(Verdict)


async def test_output_retries_sets_how_many_answers_are_sent_back() -> None:
    model = FakeModel().turn(text="a").turn(text="b").turn(text="c")
    view, log, _ = await ask(model, make_spec(output_retries=1))
    assert view.status == "failed" and len(model.requests) == 2
    assert len(bodies(log, OutputRejected)) == 2
    model = FakeModel().turn(text="a")
    view, log, _ = await ask(model, make_spec(output_retries=0))
    assert view.status == "failed" and len(model.requests) == 1
    assert "rejected once; output_retries=0 allows no further try" in (view.error or "")


async def test_a_retry_is_a_model_call_and_counts_toward_max_turns() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("lookup", {"order_id": "A1"})])
        .turn(text="not json")
        .turn(text="still not json")
        .turn(text='{"approved": true, "reason": "never reached"}')
    )
    spec = make_spec(tools=(CodeTool(name="lookup"),), max_turns=3, output_retries=5)
    view, log, report = await ask(model, spec, tools=[lookup])
    # Three model calls in all (a tool turn, an answer, one retry): max_turns stops the run,
    # as invalid output, before a fourth call, although output_retries would allow more.
    assert len(model.requests) == 3 and report.model_calls == 3
    assert view.status == "failed" and report.failure_reason == "invalid_output"
    assert "max_turns=3 leaves no model call for another try" in (view.error or "")
    assert "raise max_turns" in (view.error or "")
    assert len(bodies(log, OutputRejected)) == 2


async def test_a_json_schema_output_type_is_checked_like_a_model() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"total": {"type": "integer", "minimum": 0}},
        "required": ["total"],
        "additionalProperties": False,
    }
    model = FakeModel().turn(text='{"total": -1, "note": "x"}').turn(text='{"total": 3}')
    spec = AgentSpec(name="sum", model=ModelRef(model="fake"), output_type=schema)
    view, log, _ = await ask(model, spec)
    assert view.status == "completed" and view.output == {"total": 3}
    [rejected] = bodies(log, OutputRejected)
    assert rejected.error == (
        "the answer does not match the output schema: total: less than the minimum 0; "
        "note: not a known property (known: total)"
    )


async def test_output_as_returns_the_validated_model_or_says_why_not() -> None:
    model = FakeModel().turn(text='{"approved": false, "reason": "no receipt"}')
    view, _, _ = await ask(model, make_spec())
    verdict = view.output_as(Verdict)
    assert isinstance(verdict, Verdict) and verdict == Verdict(approved=False, reason="no receipt")

    class Other(BaseModel):
        amount: int

    with pytest.raises(
        OutputUnavailable, match=rf"run {view.run_id}: its output is not a valid Other"
    ):
        view.output_as(Other)
    # A plain-text spec: the answer text is read as JSON.
    plain = AgentSpec(name="plain", model=ModelRef(model="fake"))
    text_view, _, _ = await ask(FakeModel().turn(text='{"amount": 5}'), plain)
    assert text_view.output_as(Other) == Other(amount=5)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "if": {"required": ["a"]}},  # a keyword psych does not check
        {"type": {}, "properties": {"a": 5}},  # malformed
    ],
)
async def test_an_output_type_the_validator_cannot_check_exactly_is_held_to_json(
    schema: dict[str, Any],
) -> None:
    # Such a schema is held to being JSON, as before answers were checked against it.
    model = FakeModel().turn(text="not json").turn(text="[1]")
    spec = AgentSpec(name="loose", model=ModelRef(model="fake"), output_type=schema)
    view, log, _ = await ask(model, spec)
    assert view.status == "completed" and view.output == [1]
    assert len(bodies(log, OutputRejected)) == 1
    assert schema_problems(schema, keywords=OUTPUT_KEYWORDS)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
_keywords = st.sampled_from(sorted(OUTPUT_KEYWORDS))
_schemas = st.recursive(
    st.dictionaries(_keywords, _json, max_size=3),
    lambda inner: st.dictionaries(
        _keywords, inner | st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner)
    ),
    max_leaves=6,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_schemas, _json)
def test_checking_an_answer_never_raises_whatever_the_schema(schema: Any, value: Any) -> None:
    # next_action runs this on whatever a spec holds: it must answer, never raise.
    if not schema_problems(schema, keywords=OUTPUT_KEYWORDS):
        assert isinstance(validation_errors(schema, value), list)


def test_output_schemas_are_checked_with_every_keyword_pydantic_writes() -> None:
    class Line(BaseModel):
        pair: tuple[int, str]
        tags: set[str]
        qty: int

    schema = Line.model_json_schema()
    assert schema_problems(schema, keywords=OUTPUT_KEYWORDS) == []
    assert schema_problems(schema) != []  # tools keep their narrower set
    good = {"pair": [1, "a"], "tags": ["x", "y"], "qty": 2}
    assert validation_errors(schema, good) == []
    bad = {"pair": [1, 2], "tags": ["x", "x"], "qty": 2}
    assert validation_errors(schema, bad, root="the answer", member="property") == [
        "pair.1: expected string, got number",
        "tags: item 1 repeats an earlier item",
    ]
    others = {
        "type": "object",
        "properties": {"n": {"type": "number", "multipleOf": 0.1}},
        "patternProperties": {"^x_": {"type": "integer"}},
        "propertyNames": {"maxLength": 3},
        "additionalProperties": False,
        "minProperties": 1,
        "not": {"required": ["bad"]},
    }
    assert schema_problems(others, keywords=OUTPUT_KEYWORDS) == []
    assert validation_errors(others, {"n": 0.3, "x_1": 4}) == []
    assert validation_errors(others, {"n": 0.25, "x_1": "s", "bad": 1, "long": 1}) == [
        "n: not a multiple of 0.1",
        "x_1: expected integer, got string",
        "bad: not a known parameter (known: n)",
        "long: not an allowed parameter name",
        "long: not a known parameter (known: n)",
        "arguments: matches a form that is not allowed (not)",
    ]
    assert validation_errors(others, {}) == ["arguments: fewer than 1 properties"]


def test_a_malformed_schema_is_reported_not_crashed_on() -> None:
    broken: dict[str, Any]
    for broken in ({"type": {}}, {"minimum": "5"}, {"enum": 3}, {"prefixItems": {}}):
        assert schema_problems(broken, keywords=OUTPUT_KEYWORDS), broken
    # A definition that only refers back to itself would never finish validating.
    loop = {"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/B"}]}, "B": {"$ref": "#/$defs/A"}}}
    assert schema_problems(loop) == [
        "#: #/$defs/A -> #/$defs/B -> #/$defs/A refers to itself without descending into the value"
    ]

    # A recursive model descends into the value at each step, so it is fine.
    class Node(BaseModel):
        children: list[Node] = []

    tree = Node.model_json_schema()
    assert schema_problems(tree, keywords=OUTPUT_KEYWORDS) == []
    assert validation_errors(tree, {"children": [{"children": [{"children": 1}]}]}) == [
        "children.0.children.0.children: expected array, got number"
    ]


# -- the reducer, on logs written by hand ------------------------------------------------


SPEC = make_spec()


def _log(*bodies: Any) -> list[Record]:
    head: list[Any] = [
        RunAdmitted(
            agent=SPEC.name, spec_version=SPEC.version, input="hi", scope=Scope(tenant="t")
        ),
        AttemptStarted(worker_id="w1"),
        *bodies,
    ]
    return [
        Record(run_id="R1", seq=seq, attempt=0 if seq == 0 else 1, at=T0, body=body)
        for seq, body in enumerate(head)
    ]


def test_a_log_from_before_output_retries_folds_unchanged() -> None:
    # 0.1.0 failed a run on its first answer that was not JSON; such a log still folds.
    error = "run R1, seq 2: AgentSpec 'reviewer' asks for structured output, but ..."
    log = _log(
        ModelCallFinished(model="fake", text="Oslo"),
        RunFailed(reason="invalid_output", error=error),
    )
    state = fold_all(RunState.empty("R1", SPEC), log)
    assert state.status == "failed" and state.failure_reason == "invalid_output"
    assert state.output_rejections == () and state.error == error


def test_the_reducer_refuses_a_rejection_out_of_place() -> None:
    answered = fold_all(RunState.empty("R1", SPEC), _log(ModelCallFinished(model="fake", text="x")))
    action = next_action(answered, T0)
    assert isinstance(action, RejectOutput)
    assert (action.answer_seq, action.try_number) == (2, 1) and "not valid JSON" in action.error
    cases = [
        (OutputRejected(answer_seq=1, error="e", try_number=1), "names the answer at seq 1"),
        (OutputRejected(answer_seq=2, error="e", try_number=2), "is try 2, but this answer"),
    ]
    for body, problem in cases:
        record = Record(run_id="R1", seq=3, attempt=1, at=T0, body=body)
        with pytest.raises(FoldError, match=rf"run R1, seq 3: .*{problem}"):
            fold(answered, record)
    rejected = fold(
        answered,
        Record(
            run_id="R1",
            seq=3,
            attempt=1,
            at=T0,
            body=OutputRejected(answer_seq=2, error="e", try_number=1),
        ),
    )
    assert next_action(rejected, T0) == CallModel()
    again = Record(
        run_id="R1",
        seq=4,
        attempt=1,
        at=T0,
        body=OutputRejected(answer_seq=2, error="e", try_number=2),
    )
    with pytest.raises(FoldError, match=r"run R1, seq 4: .*no final answer awaits a decision"):
        fold(rejected, again)


def test_a_new_user_message_starts_the_tries_again() -> None:
    tries: list[Any] = []
    seq = 2
    for number in range(1, 4):
        tries += [
            ModelCallFinished(model="fake", text="bad"),
            OutputRejected(answer_seq=seq, error="e", try_number=number),
        ]
        seq += 2
    state = fold_all(RunState.empty("R1", SPEC), _log(*tries))
    assert isinstance(next_action(state, T0), Fail)
    message = SignalReceived(number=1, key="k", signal=UserInput(text="try once more"))
    state = fold(state, Record(run_id="R1", seq=state.next_seq, attempt=1, at=T0, body=message))
    assert state.output_rejections == () and next_action(state, T0) == CallModel()


def test_output_retries_at_its_default_leaves_every_spec_version_unchanged() -> None:
    spec = AgentSpec(name="a", model=ModelRef(model="m"))
    assert spec.canonical_json() == '{"model":{"model":"m"},"name":"a"}'
    assert AgentSpec(name="a", model=ModelRef(model="m"), output_retries=2).version == spec.version
    assert AgentSpec(name="a", model=ModelRef(model="m"), output_retries=3).version != spec.version
