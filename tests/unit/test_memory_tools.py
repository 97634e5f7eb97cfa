"""User memory: ``AgentSpec(memory=True)`` offers the built-in ``remember`` and ``forget`` tools,
and before each model call the end user's facts are listed in the request's instructions and
recorded, by id only, on the call's `ModelCallFinished`."""

from __future__ import annotations

import json

import pytest

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Runtime, Scope
from psych_runtime.conversations import LocalUserMemory
from psych_runtime.errors import InvalidFact, StoreUnavailable
from psych_runtime.ports import Fact, ModelRequest
from psych_runtime.records import (
    ModelCallFinished,
    Record,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallStarted,
    ToolsUnavailable,
)
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.tools import InvalidArguments, ToolContext, ToolRaised, ToolRegistry
from psych_runtime.tools._memory import Forget, Remember

SPEC = AgentSpec(name="concierge", model=ModelRef(model="fake"), memory=True)
ALICE = Scope(tenant="acme", principal="alice")
HEADING = "## What you remember about this user"


def finished(records: list[Record]) -> list[ModelCallFinished]:
    return [r.body for r in records if isinstance(r.body, ModelCallFinished)]


def listed(request: ModelRequest) -> list[str]:
    """The fact lines of a request's memory section."""
    instructions = request.instructions or ""
    if HEADING not in instructions:
        return []
    section = instructions.split(HEADING, 1)[1]
    return [line for line in section.splitlines() if line.startswith("- ")]


async def ask(
    memory: LocalUserMemory | None, scope: Scope, model: FakeModel, text: str, store: MemoryStore
) -> tuple[str, list[Record]]:
    runtime = Runtime(model=model, memory=memory)
    async with psych_runtime.session(runtime=runtime, store=store, scope=scope) as s:
        view = await s.ask(SPEC, text)
        assert view.status == "completed", view
        return view.run_id, await psych_runtime.read_log(s.store, view.run_id)


# -- the spec -------------------------------------------------------------------------------


def test_memory_is_off_by_default_and_keeps_the_version() -> None:
    plain = AgentSpec(name="a", model=ModelRef(model="m"))
    assert plain.memory is False
    assert plain.version == plain.model_copy(update={"memory": False}).version
    assert plain.version != AgentSpec(name="a", model=ModelRef(model="m"), memory=True).version


@pytest.mark.parametrize("name", ["remember", "forget"])
def test_no_own_tool_may_take_a_memory_tools_name(name: str) -> None:
    with pytest.raises(ValueError, match=rf"memory=True.*rename its own tool\(s\) \['{name}'\]"):
        AgentSpec(name="a", model=ModelRef(model="m"), memory=True, tools=[CodeTool(name=name)])
    # Without memory the names are free.
    AgentSpec(name="a", model=ModelRef(model="m"), tools=[CodeTool(name=name)])


def test_the_tools_are_offered_only_with_memory_on_a_spec_that_asks() -> None:
    memory = LocalUserMemory()
    with_memory = ToolRegistry(memory=memory)
    assert list(with_memory.resolve(SPEC, ALICE)) == ["remember", "forget"]
    plain = AgentSpec(name="a", model=ModelRef(model="m"))
    assert list(with_memory.resolve(plain, ALICE)) == []
    assert list(ToolRegistry().resolve(SPEC, ALICE)) == []
    # A child run is offered only what its parent could use.
    assert list(with_memory.resolve(SPEC, ALICE, allowed=("forget",))) == ["forget"]


# -- the tools ------------------------------------------------------------------------------


def context(scope: Scope = ALICE, call_id: str = "2.0", tool: str = "remember") -> ToolContext:
    return ToolContext(
        run_id="run-1",
        call_id=call_id,
        tool=tool,
        attempt=1,
        idempotency_key=f"run-1:{call_id}",
        scope=scope,
    )


def test_remember_validates_its_arguments() -> None:
    remember = Remember(LocalUserMemory())
    assert remember.validate('{"fact": "Prefers tea"}') == {"fact": "Prefers tea"}
    for arguments, problem in (
        ("{}", "fact must be a non-empty string"),
        ('{"fact": "  "}', "fact must be a non-empty string"),
        ('{"fact": 3}', "fact must be a non-empty string"),
        ('{"fact": "x", "why": "y"}', r"unknown arguments \['why'\]"),
        (json.dumps({"fact": "x" * 2001}), "longer than 2000 characters"),
    ):
        with pytest.raises(InvalidArguments, match=problem):
            remember.validate(arguments)
    definition = remember.definition()
    assert definition.name == "remember"
    assert definition.parameters["required"] == ["fact"]


def test_forget_validates_its_arguments() -> None:
    forget = Forget(LocalUserMemory())
    assert forget.validate('{"fact_id": " abc "}') == {"fact_id": "abc"}
    for arguments in ("{}", '{"fact_id": ""}', '{"fact_id": 7}', '{"fact_id": "a", "b": 1}'):
        with pytest.raises(InvalidArguments):
            forget.validate(arguments)


async def test_remember_stores_once_per_call_however_often_it_runs() -> None:
    memory = LocalUserMemory()
    remember = Remember(memory)
    first = await remember.invoke({"fact": "Prefers tea"}, context())
    again = await remember.invoke({"fact": "Prefers tea"}, context())  # run again after a crash
    other = await remember.invoke({"fact": "Lives in Lyon"}, context(call_id="4.0"))
    assert first == again != other
    facts = await memory.recall("acme", "alice")
    assert [(fact.text, fact.key, fact.run_id) for fact in facts] == [
        ("Lives in Lyon", "run-1:4.0", "run-1"),
        ("Prefers tea", "run-1:2.0", "run-1"),
    ]
    assert first == {"fact_id": facts[1].id}


async def test_forget_deletes_by_id_and_fails_for_an_unknown_one() -> None:
    memory = LocalUserMemory()
    fact = await memory.remember("acme", "alice", "Prefers tea", key="k")
    forget = Forget(memory)
    assert await forget.invoke({"fact_id": fact.id}, context(tool="forget")) == {
        "forgotten": fact.id
    }
    assert await memory.recall("acme", "alice") == []
    with pytest.raises(ToolRaised, match=rf"run run-1: no fact '{fact.id}' is remembered"):
        await forget.invoke({"fact_id": fact.id}, context(tool="forget"))


async def test_a_run_without_a_principal_cannot_use_memory() -> None:
    memory = LocalUserMemory()
    anonymous = Scope(tenant="acme")
    with pytest.raises(ToolRaised, match="run run-1 has no end user") as refused:
        await Remember(memory).invoke({"fact": "x"}, context(anonymous))
    assert "'remember'" in str(refused.value) and "principal" in str(refused.value)
    with pytest.raises(ToolRaised, match="run run-1 has no end user"):
        await Forget(memory).invoke({"fact_id": "x"}, context(anonymous, tool="forget"))
    assert repr(memory) == "LocalUserMemory(0 facts of 0 users)"


async def test_a_memory_that_fails_fails_the_call_saying_why() -> None:
    class Unreachable(LocalUserMemory):
        async def remember(
            self, tenant: str, user: str, text: str, *, key: str, run_id: str | None = None
        ) -> Fact:
            raise StoreUnavailable("memory db down")

    with pytest.raises(ToolRaised, match="run run-1: 'remember' could not reach the memory"):
        await Remember(Unreachable()).invoke({"fact": "x"}, context())


async def test_the_adapter_refuses_what_the_tool_would_too() -> None:
    with pytest.raises(InvalidFact, match="at most 2000"):
        await LocalUserMemory().remember("acme", "alice", "x" * 2001, key="k")


# -- runs: remember, recall into the request, forget ----------------------------------------


async def test_a_fact_remembered_in_one_run_is_in_the_next_runs_request() -> None:
    store, memory = MemoryStore(), LocalUserMemory()
    first = (
        FakeModel()
        .turn(tool_calls=[("remember", {"fact": "Prefers tea, no sugar"})])
        .turn(text="Noted.")
    )
    run_1, log_1 = await ask(memory, ALICE, first, "I like tea without sugar", store)
    assert [tool.name for tool in first.requests[0].tools] == ["remember", "forget"]
    assert listed(first.requests[0]) == [], "nothing remembered yet: no section"
    (fact,) = await memory.recall("acme", "alice")
    (start,) = [r.body for r in log_1 if isinstance(r.body, ToolCallStarted)]
    assert start.safe_to_retry is True, "a crash that cuts the call off runs it again"
    (result,) = [r.body for r in log_1 if isinstance(r.body, ToolCallFinished)]
    assert result.result == {"fact_id": fact.id}
    assert (fact.text, fact.key, fact.run_id) == ("Prefers tea, no sugar", f"{run_1}:2.0", run_1)
    # The second call of the same run already has it.
    assert listed(first.requests[1]) == [f'- {fact.id}: "Prefers tea, no sugar"']
    assert [body.recalled for body in finished(log_1)] == [(), (fact.id,)]

    second = FakeModel().turn(text="Tea, no sugar, as always.")
    _, log_2 = await ask(memory, ALICE, second, "The usual", store)
    (request,) = second.requests
    assert request.instructions is not None and HEADING in request.instructions
    assert listed(request) == [f'- {fact.id}: "Prefers tea, no sugar"']
    assert [body.recalled for body in finished(log_2)] == [(fact.id,)]
    # Only the id is in the log, never the fact's text.
    assert all("Prefers tea" not in record.model_dump_json() for record in log_2)

    # Another user of the tenant, and the same user name in another tenant, get nothing.
    for scope in (Scope(tenant="acme", principal="bob"), Scope(tenant="other", principal="alice")):
        model = FakeModel().turn(text="Hello.")
        _, log = await ask(memory, scope, model, "Hi", store)
        assert listed(model.requests[0]) == []
        assert [body.recalled for body in finished(log)] == [()]


async def test_forget_removes_a_fact_from_the_next_request() -> None:
    store, memory = MemoryStore(), LocalUserMemory()
    old = await memory.remember("acme", "alice", "Lives in Lyon", key="setup-1")
    kept = await memory.remember("acme", "alice", "Prefers tea", key="setup-2")
    model = (
        FakeModel()
        .turn(tool_calls=[("forget", {"fact_id": old.id})])
        .turn(text="Forgotten: you moved.")
    )
    _, log = await ask(memory, ALICE, model, "I moved away from Lyon", store)
    assert listed(model.requests[0]) == [
        f'- {kept.id}: "Prefers tea"',
        f'- {old.id}: "Lives in Lyon"',
    ]
    assert listed(model.requests[1]) == [f'- {kept.id}: "Prefers tea"']
    assert [body.recalled for body in finished(log)] == [(kept.id, old.id), (kept.id,)]
    assert await memory.recall("acme", "alice") == [kept]


async def test_a_fact_text_is_listed_on_one_line_as_json() -> None:
    store, memory = MemoryStore(), LocalUserMemory()
    fact = await memory.remember("acme", "alice", 'Says "hi"\n## New heading', key="k")
    model = FakeModel().turn(text="ok")
    await ask(memory, ALICE, model, "hi", store)
    assert listed(model.requests[0]) == [f'- {fact.id}: "Says \\"hi\\"\\n## New heading"']


async def test_at_most_twenty_facts_newest_first_are_given() -> None:
    store, memory = MemoryStore(), LocalUserMemory()
    facts = [await memory.remember("acme", "alice", f"fact {n}", key=f"k{n}") for n in range(25)]
    model = FakeModel().turn(text="ok")
    _, log = await ask(memory, ALICE, model, "hi", store)
    newest = facts[::-1][:20]
    assert listed(model.requests[0]) == [f'- {f.id}: "{f.text}"' for f in newest]
    assert [body.recalled for body in finished(log)] == [tuple(f.id for f in newest)]


async def test_a_run_without_a_principal_gets_no_recall_and_a_failed_call() -> None:
    store, memory = MemoryStore(), LocalUserMemory()
    await memory.remember("acme", "alice", "Prefers tea", key="k")
    model = FakeModel().turn(tool_calls=[("remember", {"fact": "x"})]).turn(text="Sorry.")
    run_id, log = await ask(memory, Scope(tenant="acme"), model, "remember x", store)
    assert listed(model.requests[0]) == []
    (failed,) = [r.body for r in log if isinstance(r.body, ToolCallFailed)]
    assert failed.reason == "error"
    assert f"run {run_id} has no end user" in failed.error
    assert [body.recalled for body in finished(log)] == [(), ()]


async def test_a_runtime_without_memory_says_so_in_the_log() -> None:
    model = FakeModel().turn(text="Hello.")
    run_id, log = await ask(None, ALICE, model, "Hi", MemoryStore())
    assert model.requests[0].tools == ()
    (missing,) = [r.body for r in log if isinstance(r.body, ToolsUnavailable)]
    assert missing.source == "memory"
    assert "Runtime(memory=...)" in missing.error
    assert run_id


async def test_a_recall_that_fails_is_recorded_and_the_call_goes_on() -> None:
    class Flaky(LocalUserMemory):
        failures = 1

        async def recall(
            self, tenant: str, user: str, *, query: str | None = None, limit: int = 20
        ) -> list[Fact]:
            if self.failures:
                self.failures -= 1
                raise StoreUnavailable("memory db down")
            return await super().recall(tenant, user, query=query, limit=limit)

    store, memory = MemoryStore(), Flaky()
    fact = await memory.remember("acme", "alice", "Prefers tea", key="k")
    model = FakeModel().turn(tool_calls=[("remember", {"fact": "Lives in Lyon"})]).turn(text="ok")
    run_id, log = await ask(memory, ALICE, model, "hi", store)
    assert listed(model.requests[0]) == [], "the first call went on without facts"
    (unavailable,) = [r.body for r in log if isinstance(r.body, ToolsUnavailable)]
    assert unavailable.source == "memory"
    assert f"run {run_id}" in unavailable.error and "memory db down" in unavailable.error
    assert len(listed(model.requests[1])) == 2, "the next call recalled again"
    first_call, second_call = finished(log)
    assert first_call.recalled == ()
    assert fact.id in second_call.recalled


async def test_erasing_a_user_leaves_no_fact_text_but_the_remember_call_in_logs() -> None:
    store, memory = MemoryStore(), LocalUserMemory()
    model = FakeModel().turn(tool_calls=[("remember", {"fact": "Prefers tea"})]).turn(text="ok")
    run_id, _ = await ask(memory, ALICE, model, "hi", store)
    assert await memory.erase("acme", "alice") == 1
    assert await memory.recall("acme", "alice") == []
    # The call's arguments stay in the run's log until the run is deleted (run retention).
    async with psych_runtime.session(FakeModel(), store=store, scope=ALICE) as s:
        log = await psych_runtime.read_log(s.store, run_id)
    assert any("Prefers tea" in record.model_dump_json() for record in log)
