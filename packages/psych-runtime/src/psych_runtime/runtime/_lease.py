"""Holding a lease: a heartbeat renews it well before it expires; losing it stops the attempt."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable

from psych_core import LeaseLost, RenewResult, Store, StoreUnavailable


async def with_lease[T](
    store: Store,
    run_id: str,
    attempt: int,
    ttl: dt.timedelta,
    work: Awaitable[T],
    on_renew: Callable[[RenewResult], None] | None = None,
) -> T:
    """Await `work` while renewing the lease every third of `ttl`.

    When a renewal says the lease is lost, `work` is cancelled at once (it appends nothing
    more) and `LeaseLost` is raised. Each renewal's answer (it carries the run's inbox count)
    goes to `on_renew`. A store that cannot be reached is tried again at the next
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
                renewed = await store.renew(run_id, attempt, ttl)
            except LeaseLost as exc:
                lost = exc
                task.cancel()
                return
            except StoreUnavailable:
                continue
            if on_renew is not None:
                on_renew(renewed)

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
