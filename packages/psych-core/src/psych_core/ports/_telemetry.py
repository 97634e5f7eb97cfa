"""The telemetry port: what the runtime tells an observer about the runs it carries.

Telemetry is derived from the log. The runtime hands an adapter what it committed (the
records, with the state they leave) after each append, what it read when it claimed a run,
and how each attempt stopped, with the timings only a running process can measure (the
append's round trip, how long the run waited for a worker). The adapter turns them into its
own signals (`psych_core.plan_batch` says which spans and events the records make), so a span
can never say something the log does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from psych_core._records import Record
from psych_core._state import RunState
from psych_core.ports._closing import Closing


@dataclass(frozen=True, slots=True)
class Claimed:
    """An attempt began: the worker claimed the run and read its log.

    Attributes:
        run_id: the run; attempt: the new attempt's number.
        log: every record of the run so far, `AttemptStarted` of this attempt included.
        state: the run folded from `log`, with its spec.
        store: the store's class name (``"PostgresStore"``), for per-store measures.
        waited: seconds from when the run became runnable (its last record, or the time it
            waited for, whichever is later) to this claim: how long it waited for a worker.
            A run whose lease expired counts the lease it waited out.
        provider: the model client's provider (``"openai"``) when it says so, else None.
    """

    run_id: str
    attempt: int
    log: Sequence[Record]
    state: RunState
    store: str
    waited: float
    provider: str | None = None


@dataclass(frozen=True, slots=True)
class Committed:
    """One append the store confirmed.

    Attributes:
        records: the records it committed, in seq order.
        state: the run after them.
        store: the store's class name.
        seconds: the append's round trip, re-sends after an unreachable store included.
        provider: as in `Claimed`.
    """

    records: Sequence[Record]
    state: RunState
    store: str
    seconds: float
    provider: str | None = None


@dataclass(frozen=True, slots=True)
class Stopped:
    """An attempt stopped: the run ended, suspended or was handed back, or the attempt stopped
    short (`error`).

    Attributes:
        run_id: the run; attempt: the attempt that stopped.
        state: the state it left the run in; None when it stopped short.
        error: the class name of what stopped it short (``"LeaseLost"``, ``"LeaseExpired"``,
            ``"StoreUnavailable"``, ...); None when it stopped as planned.
        lease_lost: whether it stopped because another attempt holds the run, or its lease
            ran out before it could renew it.
    """

    run_id: str
    attempt: int
    state: RunState | None
    error: str | None = None
    lease_lost: bool = False


class Telemetry(Closing, Protocol):
    """Where a worker (or a session) reports the runs it carries, and where `dispatch` finds
    the trace it is called in.

    Every method is called on the event loop of the attempt, right after what it reports, and
    must return quickly: an adapter that exports does so in the background (OpenTelemetry's
    batch processors do). An adapter must not raise; if one does, the runtime counts and logs
    the error and the run goes on as if nothing had been reported (a run never fails for its
    telemetry). Records are handed over as committed: secrets are already redacted from them.

    Subclassing the port gives every method a default that does nothing, so an adapter
    implements only what it uses; the runtime's default telemetry is exactly that.
    """

    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` of the trace the caller is in now, for `dispatch` to record
        in `RunAdmitted` (so the run joins the request's trace); None when there is none."""
        return None

    def claimed(self, claimed: Claimed) -> None:
        """An attempt began (see `Claimed`)."""
        return

    def committed(self, committed: Committed) -> None:
        """An append was confirmed (see `Committed`)."""
        return

    def stopped(self, stopped: Stopped) -> None:
        """An attempt stopped (see `Stopped`); what the adapter keeps for it may be let go."""
        return


class NoTelemetry(Telemetry):
    """Reports nothing: the runtime's default."""
