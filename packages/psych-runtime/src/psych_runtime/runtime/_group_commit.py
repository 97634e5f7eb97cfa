"""Group commit: the appends a worker's runs make while one is in flight go out together.

A durable step ends in one append, and with many runs in flight their appends arrive at about
the same moment. A store that can commit several runs' batches in one transaction or one round
trip overrides `Store.append_many`; the worker then sends through one `GroupCommit`:

- an append that finds nothing in flight goes straight to `Store.append`, so a run alone
  waits for nobody and pays nothing for the grouping;
- appends that arrive while one (or a group) is in flight wait for it, then go out together
  in one `append_many`, and so on while more keep coming: the store's round trips and commits
  follow the database's pace, not the number of runs.

Each run still gets exactly its own outcome (its `AppendResult`, or the error `append` would
have raised for it), so fencing, conflicts and re-sends are judged per run as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from psych_core import PsychError, StoreError
from psych_core.ports import Append, AppendResult, Batch, Store

GROUP_MOST = 64
"""The most appends one `append_many` carries."""

type _Waiting = tuple[Append, asyncio.Future[AppendResult]]


def groups_appends(store: Store) -> bool:
    """Whether `store` commits a group of appends together: it overrides `append_many`. A
    store that inherits it, or a wrapper that does not subclass `Store` and has none, is sent
    each append alone, as before group commit."""
    own = getattr(type(store), "append_many", None)
    return own is not None and own is not Store.append_many


class GroupCommit:
    """One worker's appends to one store, sent together when they arrive together."""

    def __init__(self, store: Store, most: int = GROUP_MOST) -> None:
        self._store = store
        self._most = most
        self._waiting: list[_Waiting] = []
        self._busy = False
        self._flusher: asyncio.Task[None] | None = None

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """`Store.append`, grouped with the appends that wait beside it."""
        if not self._busy:
            self._busy = True
            try:
                return await self._store.append(run_id, attempt, batch)
            finally:
                self._next()
        future: asyncio.Future[AppendResult] = asyncio.get_running_loop().create_future()
        self._waiting.append((Append(run_id, attempt, batch), future))
        return await future

    def _next(self) -> None:
        """After an append or a group: send what waits, or let the next append go alone."""
        if self._waiting:
            self._flusher = asyncio.get_running_loop().create_task(self._flush())
        else:
            self._busy = False

    async def _flush(self) -> None:
        try:
            while self._waiting:
                group = self._take()
                if group:
                    await self._send(group)
        finally:
            self._busy = False
            self._flusher = None

    def _take(self) -> list[_Waiting]:
        """The oldest waiting appends, one per run, at most `most`; appends whose caller gave
        up before they were sent are dropped (nothing of them was written)."""
        group: list[_Waiting] = []
        later: list[_Waiting] = []
        runs: set[str] = set()
        for waiting in self._waiting:
            one, future = waiting
            if future.done():
                continue
            if len(group) < self._most and one.run_id not in runs:
                runs.add(one.run_id)
                group.append(waiting)
            else:
                later.append(waiting)
        self._waiting = later
        return group

    async def _send(self, group: list[_Waiting]) -> None:
        outcomes: Sequence[AppendResult | Exception]
        try:
            outcomes = await self._outcomes([one for one, _ in group])
        except asyncio.CancelledError:
            for _, future in group:
                future.cancel()
            raise
        except Exception as failed:  # the group as a whole: every caller hears it
            outcomes = [failed] * len(group)
        for (_, future), outcome in zip(group, outcomes, strict=True):
            if future.done():  # its caller gave up meanwhile
                continue
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    async def _outcomes(self, group: list[Append]) -> list[AppendResult | PsychError]:
        if len(group) == 1:
            one = group[0]
            try:
                return [await self._store.append(one.run_id, one.attempt, one.batch)]
            except PsychError as refused:
                return [refused]
        outcomes = await self._store.append_many(group)
        if len(outcomes) != len(group):
            raise StoreError(
                f"{type(self._store).__name__}.append_many answered {len(outcomes)} outcomes "
                f"for {len(group)} appends (runs {', '.join(one.run_id for one in group)})"
            )
        return outcomes
