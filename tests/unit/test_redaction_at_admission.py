"""Admission writes through the same redaction as an attempt: `dispatch(..., secrets=...)`,
the session's `ask`, and a subagent's child run."""

from __future__ import annotations

import datetime as dt

import pytest

import psych_runtime
from psych_runtime import AgentSpec, AgentTool, EnvSecretResolver, MemoryStore, ModelRef, Scope
from psych_runtime.errors import IdempotencyConflict
from psych_runtime.model.egress import Redactor
from psych_runtime.ports import ToolCall
from psych_runtime.records import RunAdmitted
from psych_runtime.runtime import load_state
from psych_runtime.runtime._children import start_child
from psych_runtime.testing.fake_model import FakeModel

KEY = "sk-admit-9f8e7d6c5b4a"
SECRETS = EnvSecretResolver(["KEY"], environ={"KEY": KEY})
SPEC = AgentSpec(name="a", model=ModelRef(model="fake"))
SCOPE = Scope(tenant="t")


class FixedClock:
    def now(self) -> dt.datetime:
        return dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


async def admitted(store: MemoryStore, run_id: str) -> RunAdmitted:
    first = (await store.read(run_id))[0].body
    assert isinstance(first, RunAdmitted)
    return first


async def test_dispatch_with_secrets_records_the_input_redacted() -> None:
    store = MemoryStore()
    run_id = await psych_runtime.dispatch(
        store.scoped(SCOPE), SPEC, f"call the API with {KEY}", secrets=SECRETS
    )
    assert (await admitted(store, run_id)).input == "call the API with [redacted:KEY]"


async def test_dispatch_without_secrets_records_the_input_as_given() -> None:
    store = MemoryStore()
    run_id = await psych_runtime.dispatch(store.scoped(SCOPE), SPEC, f"with {KEY}")
    assert (await admitted(store, run_id)).input == f"with {KEY}"


async def test_idempotency_compares_the_input_as_sent_not_as_recorded() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    first = await psych_runtime.dispatch(
        scoped, SPEC, f"use {KEY}", idempotency_key="k", secrets=SECRETS
    )
    again = await psych_runtime.dispatch(
        scoped, SPEC, f"use {KEY}", idempotency_key="k", secrets=SECRETS
    )
    assert again == first
    # Another key in the same request is another request, though both are recorded alike.
    other = EnvSecretResolver(["KEY"], environ={"KEY": "sk-other-0123456789"})
    with pytest.raises(IdempotencyConflict):
        await psych_runtime.dispatch(
            scoped, SPEC, "use sk-other-0123456789", idempotency_key="k", secrets=other
        )


async def test_a_session_passes_its_secrets_to_admission() -> None:
    store = MemoryStore()
    model = FakeModel().turn(text="Done.")
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=model, secrets=SECRETS), store=store
    ) as s:
        view = await s.ask(SPEC, f"my key is {KEY}")
    assert (await admitted(store, view.run_id)).input == "my key is [redacted:KEY]"
    assert KEY not in repr(model.requests)


async def test_a_child_run_is_admitted_through_the_parent_attempts_redactor() -> None:
    store = MemoryStore()
    child_spec = AgentSpec(name="child", model=ModelRef(model="fake"))
    parent_spec = AgentSpec(
        name="parent",
        model=ModelRef(model="fake"),
        tools=(AgentTool(name="helper", spec=child_spec),),
    )
    parent_id = await psych_runtime.dispatch(store.scoped(SCOPE), parent_spec, "go")
    parent = await load_state(store, parent_id)
    call = ToolCall(call_id="1.0", name="helper", arguments="{}")
    ref = parent_spec.tools[0]
    assert isinstance(ref, AgentTool)

    child_id = await start_child(
        store, parent, call, ref, f"look up {KEY}", (), FixedClock(), redactor=Redactor(SECRETS)
    )
    assert (await admitted(store, child_id)).input == "look up [redacted:KEY]"
    # Without one (the parameter is optional), the input is recorded as given.
    other = ToolCall(call_id="1.1", name="helper", arguments="{}")
    plain_id = await start_child(store, parent, other, ref, "look up", (), FixedClock())
    assert (await admitted(store, plain_id)).input == "look up"
