"""`admit`: the one way a run comes to be, for `dispatch` and for a subagent's child run.

It stores the spec under its version and writes the run row with `RunAdmitted` as seq 0, the
record redacted like every other the runtime writes. Who may admit, and which id the run gets,
are the callers' business: `dispatch` asks the scoped store's policy and makes a new id; a
parent attempt derives its child's id from the call.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Protocol

from psych_core import (
    AgentSpec,
    Message,
    NewRun,
    Record,
    ReplayOf,
    RunAdmitted,
    Scope,
    WorkflowSpec,
    version_of,
)
from psych_runtime.model.egress import Redactor


class Admitting(Protocol):
    """What admission needs of a store: a scoped store (for `dispatch`) or a plain one (for a
    child run, which an attempt serving every tenant creates)."""

    async def put_spec(self, version: str, spec_json: str) -> None: ...

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]: ...


@dataclass(frozen=True, slots=True)
class Debugging:
    """What a workflow run's dispatch chose for debugging: the steps to pause before (names or
    memo keys), or every step (`step_mode`). Not part of the spec: the version stays."""

    breakpoints: tuple[str, ...] = ()
    step_mode: bool = False


@dataclass(frozen=True, slots=True)
class Continuing:
    """The run a continuation continues, what it carries of its conversation, and the messages
    it kept for the next run (`RunAdmitted.continues`, `history`, `queued`)."""

    run_id: str
    history: tuple[Message, ...] = ()
    queued: tuple[str, ...] = ()
    history_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Parent:
    """The run, and the call in it, that a child run serves; and the tools the parent could use
    (a child never gets one its parent could not; None: the parent was not narrowed)."""

    run_id: str
    call_id: str
    allowed_tools: tuple[str, ...] | None


async def admit(
    store: Admitting,
    spec: AgentSpec | WorkflowSpec,
    input: str,
    *,
    run_id: str,
    scope: Scope,
    at: dt.datetime,
    redactor: Redactor,
    idempotency_key: str | None = None,
    parent: Parent | None = None,
    debugging: Debugging | None = None,
    replay_of: ReplayOf | None = None,
    continuing: Continuing | None = None,
    traceparent: str | None = None,
) -> tuple[str, bool]:
    """Admit a run of `spec` on `input`; ``(run id, created)`` as `Store.create_run` answers.

    With an `idempotency_key`, the request is identified by the spec's version and the input
    as sent (before redaction: the same request with another secret in it is another request,
    and a resolver that learns a value later must not change it), and by what the debugging
    and the replay chose, when anything. `traceparent` is the trace the run joins
    (`RunAdmitted.traceparent`): not part of the request (a retry from another trace is the
    same request).
    """
    version = spec.version
    await store.put_spec(version, spec.canonical_json())
    debugging = debugging or Debugging()
    body = RunAdmitted(
        agent=spec.name,
        spec_version=version,
        input=input,
        scope=scope,
        parent_run_id=parent.run_id if parent else None,
        parent_call_id=parent.call_id if parent else None,
        allowed_tools=parent.allowed_tools if parent else None,
        breakpoints=debugging.breakpoints,
        step_mode=debugging.step_mode,
        replay_of=replay_of,
        continues=continuing.run_id if continuing else None,
        history=continuing.history if continuing else (),
        queued=continuing.queued if continuing else (),
        history_tokens=continuing.history_tokens if continuing else None,
        traceparent=traceparent,
    )
    request: dict[str, object] = {"spec": version, "input": input}
    if debugging != Debugging():
        request["debugging"] = [list(debugging.breakpoints), debugging.step_mode]
    if replay_of is not None:
        request["replay_of"] = [replay_of.run_id, replay_of.from_step]
    if continuing is not None:
        request["continues"] = continuing.run_id
    first = Record(run_id=run_id, seq=0, attempt=0, at=at, body=redactor.body(body))
    new = NewRun(
        run_id=run_id,
        tenant=scope.tenant,
        agent=spec.name,
        spec_version=version,
        idempotency_key=idempotency_key,
        request_hash=version_of(request) if idempotency_key else None,
        parent_run_id=parent.run_id if parent else None,
    )
    return await store.create_run(new, first)
