"""`Redactor.body` on every record body type: generic, valid, and free when nothing is secret.

Each body type of `psych_core.Body` is checked, including any added after this file was
written: a body of a type without an example here is built with the secret in every field
that can hold text.
"""

from __future__ import annotations

import datetime as dt
import json
import types
import typing
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue

from psych_runtime import Cost, EnvSecretResolver, Scope, Usage
from psych_runtime.model.egress import Redactor, redaction_mark
from psych_runtime.model.egress._redact import MIN_SECRET_LENGTH
from psych_runtime.ports import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from psych_runtime.records import (
    ApprovalDecided,
    ApprovalRequested,
    Approve,
    AttemptStarted,
    Cancel,
    ChildFinished,
    ChildStarted,
    CompactionFailed,
    ConversationCompacted,
    Deny,
    EventTaken,
    ItemStarted,
    IterationStarted,
    ModelCallFailed,
    ModelCallFinished,
    Offloaded,
    Resume,
    RunAdmitted,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunSuspended,
    SignalIgnored,
    SignalReceived,
    StateSet,
    StepCall,
    StepEntered,
    StepFailure,
    StepRetrying,
    StepSettled,
    StepsPlanned,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
    ToolCallWaiting,
    UserInput,
)
from tests._bodies import BODY_TYPES

SECRET = 'pa"ss/w\\\u00f6rd+1 2'
"""A secret with characters the encodings treat differently: a quote, a slash, a backslash,
a non-ASCII letter, a plus and a space."""
PIN = "1000"
"""A secret that is a number, and also a count some bodies hold."""
MARK = "[redacted:SECRET]"
PIN_MARK = "[redacted:PIN]"
WHEN = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def redactor() -> Redactor:
    return Redactor(EnvSecretResolver(["SECRET", "PIN"], environ={"SECRET": SECRET, "PIN": PIN}))


def every_body_type(text: str, number: int) -> list[BaseModel]:
    """One body of each record type (one `SignalReceived` per signal kind), holding `text` in
    every field where any text fits, and `number` in counts and JSON values."""
    call = ToolCall(
        call_id="2.0",
        name="send",
        arguments=json.dumps({"to": text, text: number}),
        provider_call_id=text,
    )
    known: list[BaseModel] = [
        RunAdmitted(
            agent="a",
            spec_version="v1",
            input=text,
            scope=Scope(tenant="t", principal=text, attributes={text: text}),
            allowed_tools=(text,),
        ),
        RunAdmitted(
            agent="a",
            spec_version="v1",
            input=text,
            scope=Scope(tenant="t"),
            continues=text,
            history=(
                UserMessage(text),
                AssistantMessage(text, (call,)),
                ToolResultMessage("2.0", text, text, True),
            ),
            queued=(text,),
        ),
        ConversationCompacted(
            kept_from=number,
            summary=text,
            tokens=number,
            model="m",
            usage=Usage(input=number, output=number),
            usage_source="provider",
            cost=Cost(amount=Decimal(number), source="provider"),
        ),
        CompactionFailed(model="m", error=text),
        AttemptStarted(worker_id=text),
        ModelCallFinished(
            model="m",
            text=text,
            tool_calls=(call,),
            usage=Usage(input=number, output=number),
            usage_source="provider",
            cost=Cost(amount=Decimal(number), source="provider"),
            finish_reason=text,
        ),
        ModelCallFailed(model="m", error=text, status=401),
        ToolCallStarted(call_id="2.0", name=text),
        ToolCallFinished(call_id="2.0", result={"k": text, text: [text, number], "n": number}),
        ToolCallFailed(call_id="2.0", reason="error", error=text),
        ToolCallSettled(call_id="2.0", note=text),
        ToolCallWaiting(call_id="2.0", note=text, due_at=WHEN),
        ApprovalRequested(call_id="2.0", rule=text),
        ApprovalDecided(
            number=number,
            call_id="2.0",
            approved=True,
            by=text,
            note=text,
            reason=text,
            arguments={"to": text, "amount": number},
        ),
        SignalReceived(number=number, key=text, signal=UserInput(text=text)),
        SignalReceived(number=number, key="r", signal=Resume(payload={"p": [text, number]})),
        SignalReceived(number=number, key="n", signal=Resume(payload=number)),
        SignalReceived(
            number=number,
            key="a",
            signal=Approve(call_id="2.0", by=text, note=text, arguments={text: text}),
        ),
        SignalReceived(number=number, key="d", signal=Deny(call_id="2.0", by=text, reason=text)),
        SignalReceived(number=number, key="c", signal=Cancel(reason=text, by=text)),
        SignalIgnored(number=number, key=text, reason=text),
        RunSuspended(reason="approval", due_at=WHEN, calls=(text,)),
        ChildStarted(call_id="2.0", child_run_id=text),
        ChildFinished(call_id="2.0", child_run_id=text, status=text),
        StepsPlanned(
            events=(
                StepSettled(key=text, status="completed", output={text: [text, number]}),
                StepSettled(
                    key="b",
                    status="failed",
                    failure=StepFailure(kind="error", error=text, step="b"),
                ),
                StateSet(key="s", values={text: text}),
                StepEntered(key="f", kind="foreach", items=(text, number), due_at=WHEN),
                ItemStarted(key="f", index=number),
                IterationStarted(key=text, iteration=number),
                StepRetrying(
                    key="r",
                    attempt=1,
                    failure=StepFailure(kind="timeout", error=text, step="r"),
                    due_at=WHEN,
                ),
                EventTaken(key="w", name=text),
            ),
            calls=(StepCall(call_id=text, name="charge", arguments=text, due_at=WHEN),),
            starts=number,
        ),
        RunCompleted(),
        RunCompleted(output={"k": [text, number]}),
        RunFailed(reason=text, error=text),
        RunCancelled(reason=text),
        Offloaded(body_type="tool_call_finished", tenant="t", blob=text, size=number),
    ]
    covered = {type(body) for body in known}
    return known + [built(kind, text, number) for kind in BODY_TYPES if kind not in covered]


def built(kind: type[BaseModel], text: str, number: int) -> BaseModel:
    """A `kind` with each field that takes text given `text`, and every other required field
    a value of its type."""
    values = {
        name: filler(field.annotation, text, number) for name, field in kind.model_fields.items()
    }
    return kind.model_validate(
        {
            name: value
            for name, value in values.items()
            if value is not None and (kind.model_fields[name].is_required() or value == text)
        }
    )


def filler(annotation: object, text: str, number: int) -> object:
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if annotation is str or annotation is JsonValue:
        return text
    if annotation is int or annotation is float:
        return number
    if annotation is bool:
        return True
    if annotation is dt.datetime:
        return WHEN
    if origin is typing.Literal:
        return arguments[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return built(annotation, text, number).model_dump()
    if origin in (typing.Union, types.UnionType):
        arms = [filler(arm, text, number) for arm in arguments if arm is not type(None)]
        return next((arm for arm in arms if arm is not None), None)
    if origin is tuple:
        return [filler(arguments[0], text, number)]
    if origin is dict:
        return {text: filler(arguments[1], text, number)}
    return None


def test_the_examples_cover_every_body_type() -> None:
    assert {type(body) for body in every_body_type("x", 1)} == set(BODY_TYPES)


@pytest.mark.parametrize("body", every_body_type(f"before {SECRET} after", int(PIN)), ids=repr)
def test_every_body_type_is_redacted_and_stays_a_valid_body_of_its_type(body: BaseModel) -> None:
    redacted = redactor().body(body)
    recorded = redacted.model_dump_json()
    assert type(redacted) is type(body)
    for spelling in (
        SECRET,
        json.dumps(SECRET)[1:-1],
        json.dumps(SECRET, ensure_ascii=False)[1:-1],
    ):
        assert spelling not in recorded, recorded
    # Nothing is exempt: ids and names are redacted too. Only a bare `RunCompleted` holds no
    # text.
    assert "[redacted:" in recorded or body == RunCompleted(), recorded
    # What is recorded reads back as the same body: the type tag, counts and times are kept.
    assert type(body).model_validate_json(recorded).model_dump() == redacted.model_dump()


def test_a_body_without_a_secret_comes_back_as_the_same_object() -> None:
    for body in every_body_type("nothing to hide", 7):
        assert redactor().body(body) is body, body


def test_without_a_known_secret_every_body_comes_back_as_it_is() -> None:
    resolvers = (
        None,
        EnvSecretResolver(environ={}),
        EnvSecretResolver(["S"], environ={"S": "abc"}),
    )
    for secrets in resolvers:  # the last one knows only a value too short to redact
        for body in every_body_type(f"before {SECRET} after", int(PIN)):
            assert Redactor(secrets).body(body) is body


def test_text_is_redacted_where_it_is_and_kept_where_no_text_fits() -> None:
    text = f"before {SECRET} after"
    said = f"before {MARK} after"
    finished, admitted, decided, resumed, number = (
        redactor().body(body)
        for body in (
            ModelCallFinished(
                model="m",
                text=text,
                tool_calls=(
                    ToolCall(
                        call_id="2.0", name="send", arguments=json.dumps({"to": text, "pin": 1000})
                    ),
                ),
                usage=Usage(input=1000, output=3),
                usage_source="provider",
            ),
            RunAdmitted(agent="a", spec_version="v1", input=text, scope=Scope(tenant="t")),
            ApprovalDecided(
                number=1000,
                call_id="2.0",
                approved=True,
                by="ana",
                note=text,
                arguments={"to": text, text: 1000},
            ),
            SignalReceived(number=1, key="k", signal=Resume(payload={"token": text, "pin": 1000})),
            ToolCallFinished(call_id="2.0", result=1000),
        )
    )
    assert isinstance(finished, ModelCallFinished)
    assert finished.text == said
    # The arguments are JSON text, and stay JSON: the number that spells a secret is quoted.
    assert json.loads(finished.tool_calls[0].arguments) == {"to": said, "pin": PIN_MARK}
    assert finished.usage == Usage(input=1000, output=3)  # a count is not text
    assert isinstance(admitted, RunAdmitted) and admitted.input == said
    assert isinstance(decided, ApprovalDecided)
    assert (decided.number, decided.note) == (1000, said)
    assert decided.arguments == {"to": said, said: PIN_MARK}
    assert isinstance(resumed, SignalReceived) and isinstance(resumed.signal, Resume)
    assert resumed.signal.payload == {"token": said, "pin": PIN_MARK}
    assert isinstance(number, ToolCallFinished) and number.result == PIN_MARK


def test_json_text_inside_json_text_is_redacted_too() -> None:
    inner = json.dumps({"password": SECRET})
    arguments = json.dumps({"body": inner, "also": f"x{SECRET}y"})
    call = ToolCall(call_id="2.0", name="post", arguments=arguments)
    redacted = redactor().body(ModelCallFinished(model="m", tool_calls=(call,)))
    assert isinstance(redacted, ModelCallFinished)
    outer = json.loads(redacted.tool_calls[0].arguments)
    assert outer["also"] == f"x{MARK}y"
    assert json.loads(outer["body"]) == {"password": MARK}


def strings_in(value: object) -> list[str]:
    match value:
        case str():
            return [value]
        case dict():
            return [text for key, item in value.items() for text in [key, *strings_in(item)]]
        case list() | tuple():
            return [text for item in value for text in strings_in(item)]
        case _:
            return []


STRUCTURE = {
    text for body in every_body_type("", 7) for text in strings_in(body.model_dump(mode="json"))
}
"""The strings that are not the text put in: type tags, fixed choices, call ids, times."""


printable = st.characters(exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))


@settings(max_examples=50, deadline=None)
@given(
    secret=st.text(printable, min_size=MIN_SECRET_LENGTH, max_size=16),
    before=st.text(printable, max_size=8),
    after=st.text(printable, max_size=8),
)
def test_no_body_of_any_type_keeps_an_arbitrary_secret(
    secret: str, before: str, after: str
) -> None:
    redactor = Redactor(EnvSecretResolver(["S"], environ={"S": secret}))
    spelled = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    for body in every_body_type(before + secret + after, 7):
        redacted = redactor.body(body)
        assert type(body).model_validate_json(redacted.model_dump_json()) is not None
        # A secret that spells part of the mark ("dact") is found in the mark: look around it.
        for text in set(strings_in(redacted.model_dump(mode="json"))) - STRUCTURE:
            for piece in text.split(redaction_mark("S")):
                assert not any(form in piece for form in spelled), (body, text)
