"""Replaying a workflow run from a step: a new run that copies what settled before it.

The old run is only read. The new run's `RunAdmitted` names it and carries the steps copied
from it (`ReplayOf`), so the new log says, on its own, which results it did not produce.
"""

from __future__ import annotations

from collections.abc import Sequence

from psych_core import (
    FINAL_STATUSES,
    NotReplayable,
    ReplayOf,
    RunAdmitted,
    RunState,
    ScopedStore,
    SecretResolver,
    WorkflowSpec,
    copied_steps,
    fold_all,
    replay_start,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime import (
    Clock,
    SystemClock,
    TelemetryFeed,
    admit,
    authorize,
    load_spec,
    new_run_id,
)
from psych_runtime.runtime._dispatch import check_debugging, check_workflow_input
from psych_runtime.runtime._execute_state import spec_from_json


async def replay(
    store: ScopedStore,
    run_id: str,
    *,
    from_step: str,
    input: str | None = None,
    version: WorkflowSpec | str | None = None,
    idempotency_key: str | None = None,
    breakpoints: Sequence[str] = (),
    step_mode: bool = False,
    clock: Clock | None = None,
    secrets: SecretResolver | None = None,
) -> str:
    """Admit a new run of an ended workflow run, starting again at `from_step`; its id.

    Every step that completed (or was skipped) before `from_step` in the old run, in the
    order of the workflow's tree (items and iterations by index, never by when they
    finished), is copied into the new run and shown there as ``replayed``: it does not run
    again. `from_step` and everything after it run, on the new run's own idempotency keys.
    `from_step` is a step's name (inside a foreach or loop: from its first item or
    iteration) or a memo key (``orders[2].charge``: items 0 and 1 stay copied).

    `input` is the new run's input (JSON text; the old run's by default). `version` is the
    spec the new run follows: a corrected `WorkflowSpec`, or the version of one the store
    holds; the old run's by default. A copied step whose kind the corrected spec changed runs
    again. `breakpoints` and `step_mode` are as for `dispatch`.

    The old run is untouched. Raises `RunNotFound` outside the store's tenant,
    `NotReplayable` for an agent's run, a run that has not ended (cancel it first) or a
    `from_step` the workflow does not have, `SpecError` for an input the workflow refuses.
    With a policy on the store it must allow ``replay`` of the run and ``dispatch`` of the
    workflow.
    """
    authorize(store, "replay", run_id, function="replay")
    records = await store.read(run_id)
    source = await load_spec(store, run_id, records)
    if not isinstance(source, WorkflowSpec):
        raise NotReplayable(
            run_id, f"it is a run of agent {source.name!r}, not of a workflow: dispatch it again"
        )
    state = fold_all(RunState.empty(run_id, source), records)
    if state.status not in FINAL_STATUSES:
        raise NotReplayable(
            run_id,
            f"it is {state.status}; replay a run that has ended (cancel it first), so that no "
            "step of it runs while the replay runs it again",
        )
    target = await _target(store, run_id, source, version)
    try:
        start = replay_start(target, from_step)
    except ValueError as exc:
        raise NotReplayable(run_id, str(exc)) from None
    authorize(store, "dispatch", target.name, function="replay")
    debugging = check_debugging(target, tuple(breakpoints), step_mode, function="replay")
    admitted = records[0].body
    assert isinstance(admitted, RunAdmitted)
    text = admitted.input if input is None else input
    check_workflow_input(target, text)
    copied = copied_steps(source, target, records, start)
    now = (clock or SystemClock()).now()
    new_id, _created = await admit(
        store,
        target,
        text,
        run_id=new_run_id(now),
        scope=store.scope,
        at=now,
        redactor=Redactor(secrets or store.secrets),
        idempotency_key=idempotency_key,
        debugging=debugging,
        replay_of=ReplayOf(run_id=run_id, from_step=start, steps=copied),
        traceparent=TelemetryFeed(store.telemetry).traceparent(),
    )
    return new_id


async def _target(
    store: ScopedStore, run_id: str, source: WorkflowSpec, version: WorkflowSpec | str | None
) -> WorkflowSpec:
    """The spec the new run follows."""
    if version is None:
        return source
    if isinstance(version, WorkflowSpec):
        return version
    text = await store.get_spec(version)
    if text is None:
        raise NotReplayable(
            run_id,
            f"no spec of version {version} is in the store; pass the corrected WorkflowSpec "
            "itself as version=",
        )
    spec = spec_from_json(text)
    if not isinstance(spec, WorkflowSpec):
        raise NotReplayable(run_id, f"version {version} is agent {spec.name!r}, not a workflow")
    return spec
