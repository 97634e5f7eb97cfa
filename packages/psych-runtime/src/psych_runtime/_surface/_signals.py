"""Telling a run something from outside: decisions, resumes, events, answers, cancels, user
messages.

Every function here writes one entry into the run's inbox through the store and returns its
number; the run's current attempt (or the next one, for a waiting run the entry wakes) moves
it into the log at a step boundary. Nothing here needs the run's state from the caller.
With a resolver on the store (``store.scoped(scope, secrets=...)``; a session's store has the
runtime's), every value it knows is redacted from the signal before it is stored.
With a policy on the store (``store.scoped(scope, policy=...)``), each asks it first for its
action (``approve``, ``deny``, ``resume``, ``send_event``, ``answer``, ``continue_run``,
``cancel``, ``interrupt``) on the run.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from pydantic import JsonValue

from psych_core import (
    Approve,
    Cancel,
    Deny,
    DuplicateSignal,
    InvalidAnswer,
    NotAwaitingApproval,
    Resume,
    RunRow,
    RunState,
    ScopedStore,
    Signal,
    Store,
    UserInput,
    fold_all,
    readable_status,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime import authorize


async def approve(
    store: ScopedStore,
    run_id: str,
    call_id: str,
    *,
    by: str,
    note: str | None = None,
    arguments: dict[str, Any] | None = None,
) -> int:
    """Approve the pending call `call_id` (optionally with edited `arguments`); wake the run.

    A decision is single-use: a second `approve` or `deny` of the same call, even racing this
    one, raises `NotAwaitingApproval`, as does a call that is not waiting for a decision.
    """
    authorize(store, "approve", run_id, function="approve")
    signal = Approve(call_id=call_id, by=by, note=note, arguments=arguments)
    return await _decide(store, run_id, call_id, signal)


async def deny(store: ScopedStore, run_id: str, call_id: str, *, by: str, reason: str) -> int:
    """Deny the pending call `call_id`; the model is told who denied it and why."""
    authorize(store, "deny", run_id, function="deny")
    return await _decide(store, run_id, call_id, Deny(call_id=call_id, by=by, reason=reason))


async def resume(
    store: ScopedStore, run_id: str, payload: JsonValue = None, *, key: str | None = None
) -> int:
    """End the run's wait for something external; `payload` becomes the waiting call's result.

    `key` makes the resume single-use (a second one with the same key raises
    `DuplicateSignal`); a resume that arrives when nothing waits is recorded as ignored.
    """
    authorize(store, "resume", run_id, function="resume")
    return await _send(store, run_id, Resume(payload=payload), key)


async def send_event(
    store: ScopedStore,
    run_id: str,
    event: str,
    payload: JsonValue = None,
    *,
    key: str | None = None,
) -> int:
    """Send the workflow run the event named `event`: the first wait step waiting for it
    (`WaitStep.event`) ends its wait, and `payload` is its output.

    An event that no step waits for yet, but one of the workflow's wait steps will, is kept
    for the first that does, so an event that comes early is not lost. One the workflow has
    no wait step for is recorded as ignored, with the reason. Each event ends one wait; `key`
    makes it single-use (a second one with the same key raises `DuplicateSignal`).
    """
    authorize(store, "send_event", run_id, function="send_event")
    return await _send(store, run_id, Resume(payload=payload, event=event), key)


async def answer(
    store: ScopedStore,
    run_id: str,
    step: str,
    answer: JsonValue,
    *,
    key: str | None = None,
) -> int:
    """Answer a question: a workflow's human step, or an agent's ``ask_user`` call.

    For a workflow, `step` is the step's name, or the memo key of the one waiting
    (``orders[2].approve``) when the same step waits in several foreach items
    (``status(...).waiting_for`` lists them); `answer` (checked against the step's
    `answer_schema`) becomes its output. For an agent (`AgentSpec.ask_user`), `step` is the
    asking call's id (``status(...).questions``); `answer` becomes the call's result, and a
    question with options takes only one of them (`InvalidAnswer` otherwise, and nothing is
    sent). An answer that nothing waiting takes is recorded as ignored, with the reason.
    """
    authorize(store, "answer", run_id, function="answer")
    asked = readable_status(run_id, await store.read(run_id)).questions
    question = next((q for q in asked if q.call_id == step), None)
    if question is not None and question.options and answer not in question.options:
        raise InvalidAnswer(run_id, step, answer, question.options)
    return await _send(store, run_id, Resume(payload=answer, call_id=step), key)


async def continue_run(
    store: ScopedStore,
    run_id: str,
    step: str | None = None,
    *,
    key: str | None = None,
) -> int:
    """Let a workflow run paused at a breakpoint go on: the steps paused before start.

    With no `step`, every step paused goes on. `step` names one (its name, or its memo key
    when it is paused in several foreach items); the steps paused beside it in the same round
    (parallel branches, foreach items) keep the round waiting until they are continued too.
    Only a pause at a breakpoint (`dispatch(..., breakpoints=..., step_mode=...)`) takes it,
    and nothing else ends one. One that no paused step takes is recorded as ignored, with the
    reason; ``status(...).waiting_for`` lists the pauses (``KEY!``).
    """
    authorize(store, "continue_run", run_id, function="continue_run")
    return await _send(store, run_id, Resume(call_id=step, breakpoint=True), key)


async def cancel(
    store: ScopedStore,
    run_id: str,
    reason: str = "",
    *,
    by: str | None = None,
    key: str | None = None,
) -> int:
    """Cancel a running or waiting run. Calls in flight get the worker's grace period, then
    are settled ``unknown``; calls that never began fail with reason ``cancelled``."""
    authorize(store, "cancel", run_id, function="cancel")
    return await _send(store, run_id, Cancel(reason=reason, by=by), key)


async def interrupt(
    store: ScopedStore, run_id: str, message: str, *, key: str | None = None
) -> int:
    """Add a user message to the run: the model sees it at its next turn."""
    authorize(store, "interrupt", run_id, function="interrupt")
    return await _send(store, run_id, UserInput(text=message), key)


async def due(store: Store, now: dt.datetime, limit: int = 100) -> list[RunRow]:
    """Waiting runs, of every tenant, whose time has come (a timed wait past its due time, or
    a run woken by a signal): what an app's own scheduler should start a worker for.

    Takes the plain store, like `Worker`: it serves every tenant.
    """
    return await store.due(now, limit)


async def _decide(store: ScopedStore, run_id: str, call_id: str, signal: Signal) -> int:
    records = await store.read(run_id)
    state = fold_all(RunState.empty(run_id), records)
    call = state.call(call_id)
    if call is None or call.phase != "awaiting_approval":
        where: str = "no such call in the current turn" if call is None else call.phase
        if state.ended:
            where = f"the run has ended ({state.status})"
        raise NotAwaitingApproval(run_id, call_id, where)
    try:
        return await store.signal(run_id, _redacted(store, signal), f"approval:{call_id}")
    except DuplicateSignal:
        raise NotAwaitingApproval(run_id, call_id, "already decided") from None


async def _send(store: ScopedStore, run_id: str, signal: Signal, key: str | None) -> int:
    key = key or f"{signal.kind}:{os.urandom(8).hex()}"
    return await store.signal(run_id, _redacted(store, signal), key)


def _redacted(store: ScopedStore, signal: Signal) -> Signal:
    """`signal` with the values the store's resolver knows redacted: the inbox holds it
    until the run's attempt moves it into the log, and it must not hold a secret meanwhile."""
    return Redactor(store.secrets).body(signal) if store.secrets is not None else signal
