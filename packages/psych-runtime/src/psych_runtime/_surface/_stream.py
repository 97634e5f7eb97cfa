"""`stream()`: a run's records as they land, from any process, until the run ends."""

from __future__ import annotations

from collections.abc import AsyncIterator

from psych_core import Record, RunState, ScopedStore, fold
from psych_runtime.runtime import authorize


async def stream(
    store: ScopedStore, run_id: str, after: int = -1, *, poll: float = 1.0
) -> AsyncIterator[Record]:
    """Yield the run's records with seq above `after`, in order, each exactly once, as they are
    appended by any process, until the run ends (after its final record).

    Resumable: pass the seq of the last record you handled as `after`. Waits with
    `Store.wait` (LISTEN/NOTIFY where the store has it, polling at most every `poll` seconds
    otherwise). `RunNotFound` outside the store's tenant; `PolicyDenied` when the store's
    policy does not allow ``read``.
    """
    authorize(store, "read", run_id, function="stream")
    state = RunState.empty(run_id)
    for record in await store.read(run_id):
        state = fold(state, record)
        if record.seq > after:
            yield record
    while not state.ended:
        await store.wait(run_id, state.last_seq, poll)
        for record in await store.read(run_id, state.last_seq):
            state = fold(state, record)
            if record.seq > after:
                yield record
