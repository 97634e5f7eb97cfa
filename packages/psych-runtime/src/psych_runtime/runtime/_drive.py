"""`drive`: the one way a claimed attempt runs, in a worker and in a session alike.

It reads and folds the run's log, drives one `Attempt` under its lease until the run ends,
suspends or the caller drains, and handles every way an attempt can stop short: a lost or
expired lease (another attempt holds the run), a tool this runtime lacks or a log from a newer
psych-core (handed back with backoff for another worker), a log that moved under it (handed
back at once), a store it cannot reach (the lease will expire), a corrupt log (the run fails at
once). Each is logged with the run and the attempt under ``psych_runtime.worker``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

import pydantic

from psych_core import (
    CORRUPT_LOG,
    Batch,
    Claim,
    Claimed,
    Conflict,
    CorruptLog,
    FoldError,
    InboxPending,
    LeaseExpired,
    LeaseLost,
    Record,
    RunFailed,
    RunIndex,
    RunState,
    Stopped,
    Store,
    StoreUnavailable,
    ToolNotRegistered,
    fold_readable,
)
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._attempt import Appender, Attempt
from psych_runtime.runtime._config import Runtime
from psych_runtime.runtime._execute_state import load_log
from psych_runtime.runtime._lease import Lease, with_lease
from psych_runtime.runtime._telemetry_feed import TelemetryFeed
from psych_runtime.tools import ToolRegistry

log = logging.getLogger("psych_runtime.worker")


@dataclass(frozen=True, slots=True)
class Driven:
    """How a driven attempt stopped.

    Attributes:
        state: the state the attempt left the run in: ended, waiting, or (when the caller
            drained) between steps. None when the attempt stopped short.
        error: why it stopped short: a `LeaseLost` (another attempt holds the run), a
            `StoreUnavailable`, or what made it hand the run back (`ToolNotRegistered`, a
            `FoldError`, a `Conflict`, an error of the runtime itself).
        released: whether the run was handed back for a later claim.
    """

    state: RunState | None
    error: Exception | None = None
    released: bool = False


async def drive(
    store: Store,
    claim: Claim,
    runtime: Runtime,
    registry: ToolRegistry,
    *,
    claimed_at: float | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    feed: TelemetryFeed | None = None,
    appends: Appender | None = None,
) -> Driven:
    """Run the claimed attempt until the run ends, suspends or `should_stop`; never raises
    for a way an attempt can stop (see the module's docstring).

    `claimed_at` is the event loop's time when the claim was sent: the lease counts from it.
    `registry` is `registry_of(runtime)`, and `feed` reports to `Runtime.telemetry`: each made
    once by the worker or session that owns it. The feed hears how the attempt stopped.
    """
    feed = feed or TelemetryFeed(None)
    driven = await _drive(
        store, claim, runtime, registry, claimed_at, should_stop, feed, appends or store.append
    )
    if feed.active:
        error = driven.error
        lost = isinstance(error, LeaseLost | LeaseExpired)
        name = type(error).__name__ if error is not None else None
        feed.stopped(Stopped(claim.run_id, claim.attempt, driven.state, name, lost))
    return driven


async def _drive(
    store: Store,
    claim: Claim,
    runtime: Runtime,
    registry: ToolRegistry,
    claimed_at: float | None,
    should_stop: Callable[[], bool],
    feed: TelemetryFeed,
    appends: Appender,
) -> Driven:
    run = f"run {claim.run_id} attempt {claim.attempt}"
    backoff = runtime.leases.release_backoff
    try:
        state = await _execute(
            store, claim, runtime, registry, should_stop, claimed_at, feed, appends
        )
    except LeaseExpired as exc:
        log.warning("%s stopped before its lease could run out: %s", run, exc)
        return Driven(None, exc)
    except LeaseLost as exc:
        log.warning("%s lost its lease and stopped: %s", run, exc)
        return Driven(None, exc)
    except ToolNotRegistered as exc:
        log.warning("%s: this runtime cannot serve it (%s); released for another", run, exc)
        return await _released(store, claim, runtime, backoff, exc)
    except (FoldError, pydantic.ValidationError) as exc:
        # A record type or schema this worker does not know: a newer worker wrote it. (A
        # corrupt log never gets here: the attempt fails the run at once.)
        log.warning("%s: cannot read its log (%s); released for another worker", run, exc)
        return await _released(store, claim, runtime, backoff, exc)
    except Conflict as exc:
        log.error("%s: its log moved under it (%s); released to be re-read", run, exc)
        return await _released(store, claim, runtime, dt.timedelta(0), exc)
    except StoreUnavailable as exc:
        log.warning("%s: store unavailable (%s); the lease will expire", run, exc)
        return Driven(None, exc)
    except Exception as exc:
        log.exception("%s failed inside the runtime; released with backoff", run)
        return await _released(store, claim, runtime, backoff, exc)
    _log_stop(run, state)
    return Driven(state)


async def _execute(
    store: Store,
    claim: Claim,
    runtime: Runtime,
    registry: ToolRegistry,
    should_stop: Callable[[], bool],
    claimed_at: float | None,
    feed: TelemetryFeed,
    appends: Appender,
) -> RunState:
    # A claim that brought the log before its record (a run's first claim, on a store that
    # reads record 0 with it) spares the attempt a read of the log.
    known = None if claim.log is None else [*claim.log, claim.record]
    try:
        records, state = await load_log(store, claim.run_id, known)
    except CorruptLog as corrupt:
        return await fail_corrupt(store, claim, corrupt, runtime)
    assert state.admitted is not None
    assert state.spec is not None
    if feed.active:
        feed.claimed(_claimed(store, claim, records, state, runtime, feed.provider))
    missing = registry.missing(state.spec)
    if missing is not None and not state.ended:
        raise missing
    ttl = runtime.leases.ttl
    lease = Lease(store, claim.run_id, claim.attempt, ttl, granted_at=claimed_at)
    attempt = Attempt(
        store=store,
        state=state,
        runtime=runtime,
        registry=registry,
        lease=lease,
        should_stop=should_stop,
        resend_for=ttl.total_seconds() / 2,
        feed=feed,
        appends=appends,
        inbox_last=claim.inbox_last,
    )
    lease.on_renew = attempt.heard
    return await with_lease(lease, attempt.run(), every=runtime.leases.every)


def _claimed(
    store: Store,
    claim: Claim,
    records: list[Record],
    state: RunState,
    runtime: Runtime,
    provider: str | None,
) -> Claimed:
    # The run became runnable at its last record before this attempt's start, or when the
    # time it waited for came, whichever is later.
    before = [record.at for record in records if record.attempt < claim.attempt]
    runnable = max(before) if before else records[-1].at
    if state.due_at is not None and state.due_at > runnable:
        runnable = state.due_at
    waited = max((runtime.clock.now() - runnable).total_seconds(), 0.0)
    return Claimed(
        claim.run_id, claim.attempt, records, state, type(store).__name__, waited, provider
    )


async def _released(
    store: Store, claim: Claim, runtime: Runtime, after: dt.timedelta, error: Exception
) -> Driven:
    with contextlib.suppress(LeaseLost, StoreUnavailable):
        await store.release(claim.run_id, claim.attempt, runtime.clock.now() + after)
    return Driven(None, error, released=True)


async def fail_corrupt(
    store: Store, claim: Claim, corrupt: CorruptLog, runtime: Runtime
) -> RunState:
    """End a run whose log is corrupt: one `RunFailed` after its last record, naming the run
    and the seq that does not fit. Nothing is repaired and no record is skipped or rewritten:
    the log stays as it was found, for whoever investigates, and the run stops using claims.

    Returns the state folded up to the corruption, marked failed.
    """
    records = await store.read(claim.run_id)
    readable, _ = fold_readable(RunState.empty(claim.run_id), records)
    failed = Redactor(runtime.secrets).body(RunFailed(reason=CORRUPT_LOG, error=str(corrupt)))
    inbox_seen = readable.inbox_seen
    while True:
        record = Record(
            run_id=claim.run_id,
            seq=records[-1].seq + 1,
            attempt=claim.attempt,
            at=runtime.clock.now(),
            body=failed,
        )
        batch = Batch(
            records=(record,),
            batch_id=f"{claim.attempt}.{record.seq}",
            index=RunIndex(status="failed"),
            inbox_seen=inbox_seen,
        )
        try:
            await store.append(claim.run_id, claim.attempt, batch)
            break
        except InboxPending as pending:
            # Signals cannot be folded into a log that does not fold; the run ends anyway.
            inbox_seen = pending.inbox_last
    return replace(readable, status="failed", failure_reason=CORRUPT_LOG, error=failed.error)


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
