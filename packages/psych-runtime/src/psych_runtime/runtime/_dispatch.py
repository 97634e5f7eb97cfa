"""`dispatch`: admit a run for a scope and return its id at once."""

from __future__ import annotations

import json
from collections.abc import Sequence

from psych_core import (
    AgentSpec,
    Conflict,
    ScopedStore,
    SecretResolver,
    SpecError,
    WorkflowSpec,
    step_place,
    validation_errors,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._admission import Debugging, admit
from psych_runtime.runtime._clock import Clock, SystemClock
from psych_runtime.runtime._continuation import continuation_id, continuing, existing_continuation
from psych_runtime.runtime._ids import new_run_id
from psych_runtime.runtime._scoped import authorize
from psych_runtime.runtime._telemetry_feed import TelemetryFeed


async def dispatch(
    store: ScopedStore,
    spec: AgentSpec | WorkflowSpec,
    input: str,
    *,
    idempotency_key: str | None = None,
    clock: Clock | None = None,
    secrets: SecretResolver | None = None,
    breakpoints: Sequence[str] = (),
    step_mode: bool = False,
    continues: str | None = None,
) -> str:
    """Admit a run of `spec` on `input` and return its id at once; a worker will run it.

    Stores the spec under its version and writes `RunAdmitted` as seq 0. With an
    `idempotency_key` already used in the store's tenant, admits nothing and returns the
    existing run's id; the same key with another spec or input raises `IdempotencyConflict`.
    With a policy on `store` (``store.scoped(scope, policy=...)``), it must authorize
    ``dispatch`` of the agent (`spec.name`) first: `PolicyDenied` otherwise, and nothing is
    saved. With `secrets` (the resolver the workers are given; the store's own, from
    ``store.scoped(scope, secrets=...)``, when not given), every value it knows is redacted
    from the recorded input, as from every record a worker writes.

    A `WorkflowSpec`'s input is JSON text (``json.dumps({...})``), checked against its
    `input_schema`: `SpecError` says what is wrong, and nothing is saved. For debugging a
    workflow run (not part of the spec: its version stays), `breakpoints` names the steps it
    pauses before (a name pauses before every run of that step, a memo key such as
    ``orders[2].charge`` before that one), and `step_mode` pauses before every step; a
    paused run waits, holding no worker, until `continue_run`.

    `continues` names a run of the same scope that has ended: the new run carries its
    conversation (as its next model request would have been built, so a compacted run hands
    on its summary and recent turns) and, before `input`, the messages it never gave its
    model: steers and follow-ups still waiting when it ended, then those sent with
    ``queue="next_run"``; together they are one thread (`thread`). A run is continued once:
    the same continuation again returns the same run id, any other raises `NotContinuable`
    naming the run that continues it, as does a run still going or a workflow run; another
    tenant's run is `RunNotFound`, like a missing one. It asks the policy ``read`` of that
    run first.

    With telemetry on the store (``store.scoped(scope, telemetry=...)``), the trace the caller
    is in (a traced request's) is recorded with the run, whose spans then join that trace.
    """
    authorize(store, "dispatch", spec.name, function="dispatch")
    debugging = check_debugging(spec, tuple(breakpoints), step_mode, function="dispatch")
    if isinstance(spec, WorkflowSpec):
        check_workflow_input(spec, input)
    thread = None
    if continues is not None:
        authorize(store, "read", continues, function="dispatch")
        thread = await continuing(store, continues, spec)
    now = (clock or SystemClock()).now()
    traceparent = TelemetryFeed(store.telemetry).traceparent()
    try:
        admitted_id, _created = await admit(
            store,
            spec,
            input,
            run_id=new_run_id(now) if continues is None else continuation_id(continues),
            scope=store.scope,
            at=now,
            redactor=Redactor(secrets or store.secrets),
            idempotency_key=idempotency_key,
            debugging=debugging,
            continuing=thread,
            traceparent=traceparent,
        )
    except Conflict:
        if continues is None:
            raise
        return await existing_continuation(store, continues, spec, input)
    return admitted_id


def check_debugging(
    spec: AgentSpec | WorkflowSpec,
    breakpoints: tuple[str, ...],
    step_mode: bool,
    *,
    function: str,
) -> Debugging | None:
    """What a dispatch chose for debugging, checked against `spec`: `SpecError` for an agent
    (breakpoints are a workflow's) or a breakpoint that names no step."""
    if not breakpoints and not step_mode:
        return None
    if not isinstance(spec, WorkflowSpec):
        raise SpecError(
            f"{function}: breakpoints and step_mode pause a workflow's steps; {spec.name!r} is "
            "an agent; nothing was admitted"
        )
    for breakpoint in breakpoints:
        try:
            step_place(spec, breakpoint, what="breakpoint")
        except ValueError as exc:
            raise SpecError(f"{function}: {exc}; nothing was admitted") from None
    return Debugging(breakpoints=tuple(dict.fromkeys(breakpoints)), step_mode=step_mode)


def check_workflow_input(spec: WorkflowSpec, input: str) -> None:
    """Raise `SpecError` unless `input` is JSON text that `spec.input_schema` accepts."""
    try:
        value = json.loads(input)
    except ValueError as exc:
        raise SpecError(
            f"dispatch: the input of workflow {spec.name!r} must be JSON text "
            f"(json.dumps(...)): {exc}; nothing was admitted"
        ) from None
    if spec.input_schema is None:
        return
    problems = validation_errors(spec.input_schema, value, root="input", member="field")
    if problems:
        raise SpecError(
            f"dispatch: the input of workflow {spec.name!r} does not match its input_schema: "
            f"{'; '.join(problems[:10])}; nothing was admitted"
        )
