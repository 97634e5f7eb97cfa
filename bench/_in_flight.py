"""How many runs a worker really held in flight over a measure's window, read from their logs.

A worker with 32 slots does not hold 32 runs all the time: it fills its slots one claim at a
time, a slot whose run ended is empty until its next claim answers, and at the end of the
window its last runs end out of step. A run's span in flight is read from its log once the
measure is over, so nothing is added to the path measured (wrapping the store's claims and
appends to note them cost psych about 4% of its runs/s on PostgreSQL): from its first
`AttemptStarted` (written by the claim that handed the run over, stamped with the store's
now) to its last record (the one that ended it, stamped when the runtime made it, just
before its append). The mean over a window is the sum of the spans within it divided by its
length: what a time-weighted count of the runs in flight gives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from psych_runtime.ports import Store
from psych_runtime.records import AttemptStarted

type Span = tuple[dt.datetime, dt.datetime]


async def spans(store: Store, run_ids: Sequence[str]) -> list[Span]:
    """Each run's span from its first `AttemptStarted` to its last record; a run never
    claimed has none."""
    found: list[Span] = []
    for run_id in run_ids:
        records = await store.read(run_id)
        started = next((r.at for r in records if isinstance(r.body, AttemptStarted)), None)
        if started is not None:
            found.append((started, records[-1].at))
    return found


def mean_in_flight(held: Sequence[Span], start: dt.datetime, end: dt.datetime) -> float:
    """The mean count of runs in flight between `start` and `end`, from their spans."""
    within = sum(
        max((min(stop, end) - max(begin, start)).total_seconds(), 0.0) for begin, stop in held
    )
    return within / (end - start).total_seconds()
