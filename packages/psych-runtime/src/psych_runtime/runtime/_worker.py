"""`Worker`: claims runnable runs under a lease and drives each attempt to a stop.

Any number of workers, in any number of processes on any number of hosts, share one store and
nothing else. A worker claims up to `concurrency` runs at once; a heartbeat renews each lease;
a lost lease stops that attempt at once. On SIGTERM or SIGINT it drains: no new claims, each
attempt finishes the step in hand and releases its lease, then `run()` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import signal
from collections.abc import Iterable, Mapping
from typing import Any

import pydantic

from psych_core import (
    Claim,
    Conflict,
    FoldError,
    LeaseExpired,
    LeaseLost,
    ModelClient,
    Policy,
    RunState,
    Sandbox,
    SecretResolver,
    Store,
    StoreUnavailable,
    ToolNotRegistered,
)
from psych_runtime.model import PriceTable
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.runtime._clock import Clock, SystemClock
from psych_runtime.runtime._decide import ApprovalCheck
from psych_runtime.runtime._execute import Services, execute_claim
from psych_runtime.runtime._faults import reach
from psych_runtime.runtime._ids import new_worker_id
from psych_runtime.tools import ToolFunction, ToolRegistry

log = logging.getLogger("psych_runtime.worker")


class Worker:
    """Runs the runs that `dispatch` admitted, in this process.

    Args:
        store: the plain (unscoped) store: a worker serves every tenant.
        model: the model client.
        tools: the functions runs may call, matched to the specs' tools by name.
        concurrency: how many runs this worker drives at once.
        lease_ttl: how long a claim holds a run without a heartbeat; renewed every third.
        max_attempts: claims of one run without finishing before it fails with
            ``attempts_exhausted``.
        release_backoff: how long a run this worker cannot serve (a tool it lacks, a record
            type it does not know) waits before any worker may claim it again.
        poll_interval: the longest wait between looks for new work when the store gives no
            notice of it.
        worker_id: this worker's name in `AttemptStarted` records; host, pid and a random
            suffix by default.
        clock: where times in records come from.
        secrets: the secrets whose values must never be recorded: each value it knows is
            redacted, raw or encoded, from every record before it is written.
        prices: the app's own prices, for model calls the provider did not price.
        approval_rules: named approval rules, for tools declared with
            ``requires_approval="name"``: each takes the call's arguments and returns whether
            the call needs approval. A name this worker lacks always asks for approval.
        cancel_grace: seconds in-flight calls get to finish after the run is cancelled;
            calls still running then are settled ``unknown``.
        sandbox: where sandbox tools run. Without one, a run whose spec has a sandbox tool
            is not served (released for another worker, as for any tool this worker lacks).
        egress: which addresses http tools may reach; each tool reaches only the host its URL
            names. Public addresses only when omitted: allow loopback or private networks
            here (``EgressPolicy(allow_loopback=True)``).
        policy: narrows the tools each run is offered, for the run's scope, before every model
            call (`Policy.narrow`); a call to a tool it took away is refused and recorded.
    """

    def __init__(
        self,
        store: Store,
        *,
        model: ModelClient,
        tools: Iterable[ToolFunction] = (),
        concurrency: int = 1,
        lease_ttl: dt.timedelta = dt.timedelta(seconds=30),
        max_attempts: int = 10,
        release_backoff: dt.timedelta = dt.timedelta(seconds=5),
        poll_interval: float = 1.0,
        worker_id: str | None = None,
        clock: Clock | None = None,
        secrets: SecretResolver | None = None,
        prices: PriceTable | None = None,
        approval_rules: Mapping[str, ApprovalCheck] | None = None,
        cancel_grace: float = 10.0,
        sandbox: Sandbox | None = None,
        egress: EgressPolicy | None = None,
        policy: Policy | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.store = store
        self.worker_id = worker_id or new_worker_id()
        self._clock = clock or SystemClock()
        self._services = Services(
            model=model,
            tools=ToolRegistry(tools, sandbox=sandbox, egress=egress, secrets=secrets),
            clock=self._clock,
            ttl=lease_ttl,
            secrets=secrets,
            prices=prices,
            approval_rules=dict(approval_rules or {}),
            cancel_grace=cancel_grace,
            policy=policy,
        )
        self._concurrency = concurrency
        self._ttl = lease_ttl
        self._max_attempts = max_attempts
        self._backoff = release_backoff
        self._poll = poll_interval
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Stop claiming; let each attempt finish its step and release its lease."""
        self._stopping.set()

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
            await self._services.tools.aclose()

    async def run_until_idle(self) -> None:
        """Serve runs until none is runnable and none is in hand; then return."""
        try:
            await self._supervise(until_idle=True)
        finally:
            await self._services.tools.aclose()

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
        sent = asyncio.get_running_loop().time()
        try:
            claim = await self.store.claim(
                self.worker_id, self._ttl, max_attempts=self._max_attempts
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
        run = f"run {claim.run_id} attempt {claim.attempt}"
        try:
            state = await execute_claim(
                self.store,
                claim,
                self._services,
                should_stop=self._stopping.is_set,
                claimed_at=claimed_at,
            )
            _log_stop(run, state)
        except LeaseExpired as exc:
            log.warning("%s stopped before its lease could run out: %s", run, exc)
        except LeaseLost as exc:
            log.warning("%s lost its lease and stopped: %s", run, exc)
        except ToolNotRegistered as exc:
            log.warning("%s: this worker cannot serve it (%s); released for another", run, exc)
            await self._release(claim, self._backoff)
        except (FoldError, pydantic.ValidationError) as exc:
            # A record type or schema this worker does not know: a newer worker wrote it. (A
            # corrupt log never gets here: the attempt fails the run at once.)
            log.warning("%s: cannot read its log (%s); released for another worker", run, exc)
            await self._release(claim, self._backoff)
        except Conflict as exc:
            log.error("%s: its log moved under it (%s); released to be re-read", run, exc)
            await self._release(claim, dt.timedelta(0))
        except StoreUnavailable as exc:
            log.warning("%s: store unavailable (%s); the lease will expire", run, exc)
        except Exception:
            log.exception("%s failed inside the worker; released with backoff", run)
            await self._release(claim, self._backoff)

    async def _release(self, claim: Claim, after: dt.timedelta) -> None:
        with contextlib.suppress(LeaseLost, StoreUnavailable):
            await self.store.release(claim.run_id, claim.attempt, self._clock.now() + after)


def _log_stop(run: str, state: RunState) -> None:
    # INFO for what an operator follows (a run ending, waiting, handed back); the records
    # say the rest. Quiet unless the app configures logging, as libraries should be.
    match state.status:
        case "completed":
            log.info("%s completed", run)
        case "failed":
            log.info("%s failed (%s): %s", run, state.failure_reason, state.error)
        case "cancelled":
            log.info("%s was cancelled", run)
        case "waiting":
            log.info("%s is waiting (%s)", run, state.waiting)
        case _:
            log.info("%s stopped with status %s (the worker is draining)", run, state.status)
