"""How many runs a worker really held in flight over a measure's window.

A worker with 32 slots does not hold 32 runs all the time: it fills its slots one claim at a
time, a slot whose run ended is empty until its next claim answers, and at the end of the
window its last runs end out of step. `InFlight` notes, from the store's side, when each
claim handed a run over and when the append that suspends or ends it returned; the mean over
a window is the sum of those spans within it divided by its length, what a time-weighted
count of the runs in flight gives.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from psych_runtime.ports import AppendResult, Batch, Claim, Store

if TYPE_CHECKING:  # names a tree from before group commit lacks (`bench.against_ref`)
    from psych_runtime.errors import PsychError
    from psych_runtime.ports import Append


class InFlight:
    """From now on, note each run's span in flight on `store` (its claims and appends are
    wrapped on the instance, so build the worker after this)."""

    def __init__(self, store: Store) -> None:
        self._since: dict[str, float] = {}
        self.spans: list[tuple[float, float]] = []
        claim, append = store.claim, store.append
        append_many = getattr(store, "append_many", None)  # None before group commit

        async def claimed(
            worker_id: str,
            ttl: dt.timedelta,
            *,
            run_id: str | None = None,
            max_attempts: int = 10,
        ) -> Claim | None:
            taken = await claim(worker_id, ttl, run_id=run_id, max_attempts=max_attempts)
            if taken is not None:
                self._since[taken.run_id] = time.perf_counter()
            return taken

        async def appended(run_id: str, attempt: int, batch: Batch) -> AppendResult:
            result = await append(run_id, attempt, batch)
            self._ended(run_id, batch)
            return result

        async def appended_many(appends: Sequence[Append]) -> list[AppendResult | PsychError]:
            assert append_many is not None
            outcomes = list(await append_many(appends))
            for one, outcome in zip(appends, outcomes, strict=True):
                if isinstance(outcome, AppendResult):
                    self._ended(one.run_id, one.batch)
            return outcomes

        store.claim = claimed  # type: ignore[method-assign]
        store.append = appended  # type: ignore[method-assign]
        if append_many is not None:
            store.append_many = appended_many  # type: ignore[method-assign]

    def _ended(self, run_id: str, batch: Batch) -> None:
        if batch.index.releases_lease and run_id in self._since:
            self.spans.append((self._since.pop(run_id), time.perf_counter()))

    def mean(self, start: float, end: float) -> float:
        """The mean count of runs in flight between `start` and `end` (`time.perf_counter`)."""
        held = sum(max(min(stop, end) - max(begin, start), 0.0) for begin, stop in self.spans)
        return held / (end - start)
