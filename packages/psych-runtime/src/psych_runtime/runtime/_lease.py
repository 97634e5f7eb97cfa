"""Holding a lease: a heartbeat renews it well before it expires; losing it stops the attempt."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable

from psych_core import LeaseLost, Store, StoreUnavailable


async def with_lease[T](
    store: Store, run_id: str, attempt: int, ttl: dt.timedelta, work: Awaitable[T]
) -> T:
    """Await `work` while renewing the lease every third of `ttl`.

    When a renewal says the lease is lost, `work` is cancelled at once (it appends nothing
    more) and `LeaseLost` is raised. A store that cannot be reached is tried again at the next
    beat; the fence protects the log if the lease expires meanwhile.
    """
    task = asyncio.ensure_future(work)
    interval = ttl.total_seconds() / 3
    lost: LeaseLost | None = None

    async def beat() -> None:
        nonlocal lost
        while True:
            await asyncio.sleep(interval)
            try:
                await store.renew(run_id, attempt, ttl)
            except LeaseLost as exc:
                lost = exc
                task.cancel()
                return
            except StoreUnavailable:
                continue

    heartbeat = asyncio.create_task(beat())
    try:
        return await task
    except asyncio.CancelledError:
        if lost is not None:
            raise lost from None
        raise
    finally:
        heartbeat.cancel()
        task.cancel()
