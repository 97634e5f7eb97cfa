"""Holding a lease: a heartbeat renews it well before it expires; losing it stops the attempt.

The store keeps the lease on its own clock (the database's, where there is one). The attempt
keeps a deadline of its own on this process's monotonic clock, which can only be earlier than
the store's: each grant (the claim, a renewal) is counted from the moment its request was
sent, before the store set the expiry. So once the local deadline has passed, the lease has
certainly expired, whatever the clocks say, and another attempt may hold the run.

The fence keeps the log safe from a stale attempt; the local deadline keeps the world safe from
it. Before an effect that is not safe to repeat, the attempt asks `Lease.ensure` for the time
the effect may need: when less is left (a paused process, a store it cannot reach), it renews
first, and starts the effect only if the renewal shows the lease is still its own.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable

from psych_core import LeaseExpired, LeaseLost, RenewResult, Store, StoreUnavailable


class Lease:
    """One attempt's lease on one run, as this process knows it.

    Args:
        granted_at: the event loop's time (`loop.time()`) when the request that granted the
            lease (the claim) was sent; now when omitted.
    """

    def __init__(
        self,
        store: Store,
        run_id: str,
        attempt: int,
        ttl: dt.timedelta,
        *,
        granted_at: float | None = None,
        on_renew: Callable[[RenewResult], None] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.attempt = attempt
        self.ttl = ttl.total_seconds()
        self._ttl = ttl
        self._loop = asyncio.get_running_loop()
        sent = self._loop.time() if granted_at is None else granted_at
        self._deadline = sent + self.ttl
        self.on_renew = on_renew

    def remaining(self) -> float:
        """Seconds the lease certainly has left (negative once it has certainly expired)."""
        return self._deadline - self._loop.time()

    async def renew(self) -> RenewResult:
        """Renew the lease now. `LeaseLost` when another attempt holds the run."""
        sent = self._loop.time()
        renewed = await self.store.renew(self.run_id, self.attempt, self._ttl)
        self._deadline = max(self._deadline, sent + self.ttl)
        if self.on_renew is not None:
            self.on_renew(renewed)
        return renewed

    async def renew_within(self) -> RenewResult:
        """`renew`, given up (`TimeoutError`) once the lease has certainly expired: a store
        that does not answer (a partition drops packets) must not hold the attempt past it."""
        async with asyncio.timeout(max(self.remaining(), self.ttl / 10)):
            return await self.renew()

    async def ensure(self, needed: float, before: str) -> None:
        """Return only when the lease certainly lasts `needed` seconds more; renew if it must.

        Raises `LeaseLost` when another attempt holds the run, and `LeaseExpired` when the
        store cannot be reached to renew a lease that is too short: either way the effect
        named by `before` must not start.
        """
        if self.remaining() >= needed:
            return
        try:
            await self.renew_within()
        except (StoreUnavailable, TimeoutError) as exc:
            raise LeaseExpired(
                self.run_id,
                self.attempt,
                f"its lease has {max(self.remaining(), 0.0):.3g} s left, less than the "
                f"{needed:.3g} s {before} may need, and the store could not be reached to "
                f"renew it ({exc})",
            ) from exc
        if self.remaining() < needed:
            raise LeaseExpired(
                self.run_id,
                self.attempt,
                f"a renewed lease of {self.ttl:g} s is shorter than the {needed:.3g} s "
                f"{before} may need",
            )

    def safe_margin(self, timeout: float | None) -> float:
        """How long an unsafe effect needs the lease to last before it may start: its
        timeout, but never more than half the lease (a heartbeat renews it long before)."""
        half = self.ttl / 2
        return half if timeout is None else min(timeout, half)


async def with_lease[T](lease: Lease, work: Awaitable[T], *, every: float | None = None) -> T:
    """Await `work` while renewing `lease` every `every` seconds (a third of its length when
    None).

    When a renewal says the lease is lost, `work` is cancelled at once (it appends nothing
    more) and `LeaseLost` is raised. A store that cannot be reached is tried again at the next
    beat; once the lease has certainly expired without a renewal, `work` is cancelled and
    `LeaseExpired` is raised: another attempt may hold the run by then.
    """
    task = asyncio.ensure_future(work)
    interval = every if every is not None else lease.ttl / 3
    lost: LeaseLost | None = None

    async def beat() -> None:
        nonlocal lost
        while True:
            await asyncio.sleep(min(interval, max(lease.remaining(), 0.0)))
            try:
                await lease.renew_within()
            except LeaseLost as exc:
                lost = exc
                task.cancel()
                return
            except (StoreUnavailable, TimeoutError) as exc:
                if lease.remaining() <= 0:
                    lost = LeaseExpired(
                        lease.run_id,
                        lease.attempt,
                        f"its lease of {lease.ttl:g} s ran out while the store could not be "
                        f"reached to renew it ({exc or type(exc).__name__})",
                    )
                    task.cancel()
                    return

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
