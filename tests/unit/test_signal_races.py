"""No signal is lost when it races a run that is about to suspend or end."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from typing import Any

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Runtime, Scope, Worker
from psych_runtime.ports import UserMessage
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(
    name="refunds",
    model=ModelRef(model="fake"),
    tools=(CodeTool(name="refund", requires_approval=True),),
)


async def refund(order_id: str) -> str:
    """Refund an order."""
    return "refunded"


async def _after[T](ticks: int, work: Coroutine[Any, Any, T]) -> T:
    """Run `work` after letting the loop turn `ticks` times."""
    for _ in range(ticks):
        await asyncio.sleep(0)
    return await work


async def test_cancels_racing_a_suspend_are_never_lost() -> None:
    rng = random.Random(3)
    for trial in range(40):
        store = MemoryStore()
        scoped = store.scoped(SCOPE)
        run_id = await psych_runtime.dispatch(scoped, SPEC, "refund A1")
        model = FakeModel().turn(tool_calls=[("refund", {"order_id": "A1"})])
        worker = Worker(store, Runtime(model=model, tools=[refund]))

        cancel = psych_runtime.cancel(scoped, run_id, f"trial {trial}")
        await asyncio.gather(worker.run_until_idle(), _after(rng.randint(0, 6), cancel))
        # Whatever the interleaving, the cancel is in the log once the run is served again.
        await Worker(store, Runtime(model=FakeModel(), tools=[refund])).run_until_idle()
        status = await psych_runtime.status(scoped, run_id)
        assert status.status == "cancelled", (trial, status)


async def test_user_input_racing_the_final_answer_gets_its_own_turn() -> None:
    rng = random.Random(5)
    for trial in range(40):
        store = MemoryStore()
        scoped = store.scoped(SCOPE)
        spec = AgentSpec(name="chat", model=ModelRef(model="fake"))
        run_id = await psych_runtime.dispatch(scoped, spec, "hi")
        model = FakeModel().turn(text="Hello!").turn(text="Yes, B2 too.")

        worker = Worker(store, Runtime(model=model, tools=[]))
        interrupt = psych_runtime.interrupt(scoped, run_id, "and B2?")
        _, sent = await asyncio.gather(
            worker.run_until_idle(),
            _after(rng.randint(0, 6), interrupt),
            return_exceptions=True,
        )
        accepted = not isinstance(sent, psych_runtime.errors.RunFinished)
        assert accepted or isinstance(sent, psych_runtime.errors.RunFinished)
        await Worker(store, Runtime(model=model, tools=[])).run_until_idle()
        status = await psych_runtime.status(scoped, run_id)
        assert status.status == "completed"
        if accepted:
            # The message was accepted before the run ended, so the model's last call saw it.
            assert status.turns == 2, trial
            last = model.requests[-1].messages
            assert any(isinstance(m, UserMessage) and m.text == "and B2?" for m in last), trial


async def test_a_message_landing_just_before_the_final_append_is_answered() -> None:
    class RacingStore(MemoryStore):
        """Delivers a user message at the last moment before the run's final append."""

        raced = False

        async def append(
            self, run_id: str, attempt: int, batch: psych_runtime.ports.Batch
        ) -> psych_runtime.ports.AppendResult:
            closing = any(r.body.type == "run_completed" for r in batch.records)
            if closing and not self.raced:
                self.raced = True
                await self.signal(
                    "acme", run_id, psych_runtime.records.UserInput(text="and B2?"), "late"
                )
            return await super().append(run_id, attempt, batch)

    store = RacingStore()
    scoped = store.scoped(SCOPE)
    run_id = await psych_runtime.dispatch(
        scoped, AgentSpec(name="c", model=ModelRef(model="f")), "hi"
    )
    model = FakeModel().turn(text="Hello!").turn(text="B2 shipped too.")
    await Worker(store, Runtime(model=model, tools=[])).run_until_idle()
    log = await psych_runtime.read_log(scoped, run_id)
    assert [r.body.type for r in log] == [
        "run_admitted",
        "attempt_started",
        "model_call_finished",  # kept: the refused batch lost only its closing record
        "signal_received",
        "model_call_finished",
        "run_completed",
    ]
    status = await psych_runtime.status(scoped, run_id)
    assert (status.status, status.turns, status.model_calls) == ("completed", 2, 2)
