"""`Worker`: claims runnable runs under a lease and drives each attempt to a stop.

Any number of workers, in any number of processes on any number of hosts, share one store and
nothing else. A worker claims up to `concurrency` runs at once; a heartbeat renews each lease;
a lost lease stops that attempt at once. On SIGTERM or SIGINT it drains: no new claims, each
attempt finishes the step in hand and releases its lease, then `run()` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import Any

from psych_core import Claim, Store, StoreUnavailable
from psych_runtime.runtime._config import Runtime, registry_of
from psych_runtime.runtime._drive import drive
from psych_runtime.runtime._faults import reach
from psych_runtime.runtime._group_commit import GroupCommit, groups_appends
from psych_runtime.runtime._ids import new_worker_id
from psych_runtime.runtime._legacy import runtime_of
from psych_runtime.runtime._telemetry_feed import TelemetryFeed

log = logging.getLogger("psych_runtime.worker")


class Worker:
    """Runs the runs that `dispatch` admitted, in this process.

    ``Worker(store, Runtime(model=..., tools=[...]))``: everything the runs execute with is in
    the `Runtime`; what is the worker's own (how many runs at once, how it looks for work, its
    name) is here.

    Args:
        store: the plain (unscoped) store: a worker serves every tenant.
        runtime: what runs execute with (model, tools, secrets, leases, ...).
        concurrency: how many runs this worker drives at once.
        poll_interval: the longest wait between looks for new work when the store gives no
            notice of it.
        worker_id: this worker's name in `AttemptStarted` records; host, pid and a random
            suffix by default.
        **options: deprecated: the `Runtime`'s options one by one (``model=``, ``tools=``,
            ``lease_ttl=``, ...), each with a `DeprecationWarning`.
    """

    def __init__(
        self,
        store: Store,
        runtime: Runtime | None = None,
        *,
        concurrency: int = 1,
        poll_interval: float = 1.0,
        worker_id: str | None = None,
        **options: Any,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.store = store
        self.runtime = runtime_of(runtime, options, "Worker")
        self.worker_id = worker_id or new_worker_id()
        self._registry = registry_of(self.runtime)
        self._feed = TelemetryFeed.of(self.runtime.telemetry, self.runtime.model)
        # Runs in flight together share commits, where the store can group them.
        self._appends = GroupCommit(store).append if groups_appends(store) else store.append
        self._concurrency = concurrency
        self._poll = poll_interval
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Stop claiming; let each attempt finish its step and release its lease."""
        self._stopping.set()

    @property
    def telemetry_errors(self) -> int:
        """How many reports the telemetry adapter failed (each logged; no run failed for it)."""
        return sum(self._feed.errors.values())

    @property
    def stopping(self) -> bool:
        """Whether `stop` was called (or SIGTERM/SIGINT received)."""
        return self._stopping.is_set()

    async def run(self) -> None:
        """Serve runs until `stop()`, SIGTERM or SIGINT; then drain and return."""
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.stop)
                installed.append(sig)
        try:
            await self._supervise(until_idle=False)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            await self._registry.aclose()

    async def run_until_idle(self) -> None:
        """Serve runs until none is runnable and none is in hand; then return."""
        try:
            await self._supervise(until_idle=True)
        finally:
            await self._registry.aclose()

    async def _supervise(self, *, until_idle: bool) -> None:
        tasks: set[asyncio.Task[None]] = set()
        stop_wait = asyncio.ensure_future(self._stopping.wait())
        try:
            while not self.stopping:
                claimed_any = False
                while len(tasks) < self._concurrency and not self.stopping:
                    claimed = await self._claim()
                    if claimed is None:
                        break
                    claimed_any = True
                    claim, sent = claimed
                    tasks.add(asyncio.create_task(self._serve(claim, sent), name=claim.run_id))
                if until_idle and not tasks and not claimed_any:
                    return
                waiters: set[asyncio.Future[Any]] = {*tasks, stop_wait}
                work: asyncio.Future[None] | None = None
                if len(tasks) < self._concurrency:
                    work = asyncio.ensure_future(self.store.wait(None, -1, self._poll))
                    waiters.add(work)
                try:
                    await asyncio.wait(
                        waiters, timeout=self._poll, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    if work is not None and not work.done():
                        work.cancel()
                finished = {task for task in tasks if task.done()}
                for task in finished:
                    self._report_death(task)
                tasks -= finished
        finally:
            stop_wait.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    def _report_death(self, task: asyncio.Task[None]) -> None:
        # `_serve` handles every Exception; what is left ended the attempt like a crash: its
        # lease is not released and expires, and another attempt takes the run over.
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error(
                "run %s: the attempt died (%r); its lease will expire", task.get_name(), error
            )

    async def _claim(self) -> tuple[Claim, float] | None:
        """A claim, and the event loop's time when it was asked for (its lease counts from
        then)."""
        leases = self.runtime.leases
        sent = asyncio.get_running_loop().time()
        try:
            claim = await self.store.claim(
                self.worker_id, leases.ttl, max_attempts=leases.max_attempts
            )
        except StoreUnavailable as exc:
            log.warning("worker %s: store unavailable while claiming: %s", self.worker_id, exc)
            await asyncio.sleep(min(self._poll, 1.0))
            return None
        if claim is None:
            return None
        log.info(
            "worker %s claimed run %s attempt %d (tenant %s)",
            self.worker_id,
            claim.run_id,
            claim.attempt,
            claim.tenant,
        )
        reach("after_claim")
        return claim, sent

    async def _serve(self, claim: Claim, claimed_at: float) -> None:
        await drive(
            self.store,
            claim,
            self.runtime,
            self._registry,
            claimed_at=claimed_at,
            should_stop=self._stopping.is_set,
            feed=self._feed,
            appends=self._appends,
        )
