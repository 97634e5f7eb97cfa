"""Reading a run back: every function here is a fold of the same log."""

from __future__ import annotations

from psych_core import (
    NotReplayable,
    Record,
    Report,
    RunState,
    RunStatus,
    ScopedStore,
    WorkflowSpec,
    WorkflowView,
    build_report,
    readable_status,
    workflow_view_of,
)
from psych_runtime.runtime import authorize, load_spec


async def read_log(store: ScopedStore, run_id: str) -> list[Record]:
    """Every record of the run, in order. `RunNotFound` outside the store's tenant.

    Content kept in a `BlobStore` (through `OffloadingStore`) comes back whole. Like every
    reading function, it asks the store's policy first (``read``): `PolicyDenied`.
    """
    authorize(store, "read", run_id, function="read_log")
    return await store.read(run_id)


async def status(store: ScopedStore, run_id: str) -> RunStatus:
    """The run's status: small and JSON-serialisable, what a screen draws.

    It answers even for a corrupt log: ``failed`` with the reason ``corrupt_log`` and an
    error naming the run and the seq that does not fit (`report` raises `CorruptLog`).
    """
    authorize(store, "read", run_id, function="status")
    records = await store.read(run_id)
    return readable_status(run_id, records)


async def report(store: ScopedStore, run_id: str) -> Report:
    """What happened in the run: turns, model calls, tool calls with outcomes, totals.

    `totals` rolls up the usage and cost of the run's subagents (and theirs); `own_totals` is
    the run's own; each child's report is readable on its own too. Each tool call's result
    comes back whole, with its size (`ToolCallReport.result_bytes`), even when it was kept in
    a `BlobStore`.
    """
    authorize(store, "read", run_id, function="report")
    records = await store.read(run_id)
    spec = await load_spec(store, run_id, records)
    own = build_report(RunState.empty(run_id, spec), records)
    totals = own.totals
    for child in own.children:
        totals = totals + (await report(store, child)).totals
    return own.model_copy(update={"totals": totals})


async def workflow_view(store: ScopedStore, run_id: str) -> WorkflowView:
    """A workflow run's step tree: every step in its place with its status (``pending``,
    ``running``, ``waiting``, ``paused``, ``retrying``, ``completed``, ``failed``,
    ``skipped``, ``replayed``), tries, resolved input, output, failure and times; a foreach's
    items and a loop's iterations with their steps.

    Folded from the log by the reducer the engine uses: a log it cannot fold raises
    `CorruptLog` naming the run and the seq. `NotReplayable` for an agent's run (read it with
    `report`); `RunNotFound` outside the store's tenant.
    """
    authorize(store, "read", run_id, function="workflow_view")
    records = await store.read(run_id)
    spec = await load_spec(store, run_id, records)
    if not isinstance(spec, WorkflowSpec):
        raise NotReplayable(
            run_id, f"it is a run of agent {spec.name!r}, not of a workflow: read it with report()"
        )
    return workflow_view_of(spec, records)
