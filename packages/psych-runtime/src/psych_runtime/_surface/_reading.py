"""Reading a run back: every function here is a fold of the same log."""

from __future__ import annotations

from psych_core import (
    Record,
    Report,
    RunState,
    RunStatus,
    ScopedStore,
    build_report,
    fold_all,
    status_of,
)
from psych_runtime.runtime import load_spec


async def read_log(store: ScopedStore, run_id: str) -> list[Record]:
    """Every record of the run, in order. `RunNotFound` outside the store's tenant.

    Content kept in a `BlobStore` (through `OffloadingStore`) comes back whole. Like every
    reading function, it asks the store's policy first (``read``): `PolicyDenied`.
    """
    store.authorize("read", run_id)
    return await store.read(run_id)


async def status(store: ScopedStore, run_id: str) -> RunStatus:
    """The run's status: small and JSON-serialisable, what a screen draws."""
    store.authorize("read", run_id)
    records = await store.read(run_id)
    return status_of(fold_all(RunState.empty(run_id), records))


async def report(store: ScopedStore, run_id: str) -> Report:
    """What happened in the run: turns, model calls, tool calls with outcomes, totals.

    `totals` rolls up the usage and cost of the run's subagents (and theirs); `own_totals` is
    the run's own; each child's report is readable on its own too. Each tool call's result
    comes back whole, with its size (`ToolCallReport.result_bytes`), even when it was kept in
    a `BlobStore`.
    """
    store.authorize("read", run_id)
    records = await store.read(run_id)
    spec = await load_spec(store.store, run_id, records)
    own = build_report(RunState.empty(run_id, spec), records)
    totals = own.totals
    for child in own.children:
        totals = totals + (await report(store, child)).totals
    return own.model_copy(update={"totals": totals})
