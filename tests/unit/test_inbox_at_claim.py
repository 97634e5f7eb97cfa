"""An attempt reads its run's inbox before its first decision only when its claim found entries
the log has not taken in yet (`Claim.inbox_last`), or when the store's claim does not say."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from psych_core import Claim, InboxEntry, UserInput
from psych_runtime import AgentSpec, MemoryStore, ModelRef, Runtime, Scope, Worker, dispatch
from psych_runtime.testing.fake_model import FakeModel

SPEC = AgentSpec(name="inbox", model=ModelRef(model="fake"))
HOME = Scope(tenant="acme", principal="ann")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The `after` of every inbox read the worker makes, in order."""
    seen: list[int] = []
    signals = MemoryStore.signals

    async def counted(self: MemoryStore, run_id: str, after: int = 0) -> list[InboxEntry]:
        seen.append(after)
        return await signals(self, run_id, after)

    monkeypatch.setattr(MemoryStore, "signals", counted)
    return seen


async def test_a_run_nobody_signalled_never_reads_its_inbox(reads: list[int]) -> None:
    store = MemoryStore()
    run_id = await dispatch(store.scoped(HOME), SPEC, "hello")
    await Worker(store, Runtime(model=FakeModel().turn(text="hi"))).run_until_idle()
    assert (await store.get_run("acme", run_id)).status == "completed"  # type: ignore[union-attr]
    assert reads == []


async def test_entries_the_claim_found_are_read_before_the_first_decision(
    reads: list[int],
) -> None:
    store = MemoryStore()
    run_id = await dispatch(store.scoped(HOME), SPEC, "hello")
    await store.signal("acme", run_id, UserInput(text="and this too"), "input:1")
    model = FakeModel().turn(text="both")
    await Worker(store, Runtime(model=model)).run_until_idle()
    assert reads == [0]
    assert "and this too" in str(model.requests[0].messages)


async def test_a_claim_that_does_not_say_reads_the_inbox_first(
    reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    claim = MemoryStore.claim

    async def silent(self: MemoryStore, *args: Any, **kwargs: Any) -> Claim | None:
        taken = await claim(self, *args, **kwargs)
        return None if taken is None else replace(taken, inbox_last=None)

    monkeypatch.setattr(MemoryStore, "claim", silent)
    store = MemoryStore()
    await dispatch(store.scoped(HOME), SPEC, "hello")
    await Worker(store, Runtime(model=FakeModel().turn(text="hi"))).run_until_idle()
    assert reads == [0]
