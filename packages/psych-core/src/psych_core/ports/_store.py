"""The `Store` port: where runs, their logs and their specs live.

Stores are dumb: they keep records as opaque JSON plus a few index columns and never interpret
a body. Every rule about what a record means lives in the reducer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from psych_core._errors import PsychError, RunNotFound
from psych_core._quick_init import quick_init
from psych_core._records import Record
from psych_core._scope import Scope
from psych_core._signals import InboxEntry, Signal
from psych_core._state import RunStatusName, WaitingReason
from psych_core.ports._closing import Closing
from psych_core.ports._policy import Policy, PolicyAction
from psych_core.ports._secrets import SecretResolver
from psych_core.ports._telemetry import Telemetry


@dataclass(frozen=True, slots=True)
class StoreLimits:
    """The largest record, batch and byte count one append may carry.

    The runtime keeps below these; the contract suite tests each store at them. The defaults
    (4 MiB a record, 1000 records and 16 MiB an append) are what a database store keeps
    unless it is told otherwise or its database holds less.
    """

    max_record_bytes: int = 4 * 1024 * 1024
    max_append_records: int = 1000
    max_append_bytes: int = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class NewRun:
    """A run to create.

    Attributes:
        request_hash: identifies the request behind `idempotency_key`, so the same key with a
            different request can be refused (`IdempotencyConflict`).
    """

    run_id: str
    tenant: str
    agent: str
    spec_version: str
    idempotency_key: str | None = None
    request_hash: str | None = None
    parent_run_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunIndex:
    """The run row's index columns after a batch, computed by the runtime's fold.

    A batch whose status is ``waiting`` or final releases the attempt's lease: the store sets
    ``runnable_at`` to `due_at` (a timed wait) or to nothing (a wait on a person, or the end).
    """

    status: RunStatusName
    waiting: WaitingReason | None = None
    due_at: dt.datetime | None = None

    @property
    def releases_lease(self) -> bool:
        """Whether this batch suspends or ends the run."""
        return self.status not in ("queued", "running")


@dataclass(frozen=True, slots=True)
class Notify:
    """A signal for another run, written into its inbox by the same transaction as an append.

    A run that wakes another (a child ending wakes its parent; a parent cancelling its
    children) does it this way, so no crash can separate the record from the wake-up.
    """

    run_id: str
    key: str
    signal: Signal


@quick_init
@dataclass(frozen=True, slots=True)
class Batch:
    """Records to append at once, all or none.

    Attributes:
        records: their seqs continue the log without a gap.
        batch_id: re-sending a batch with the same id from the same attempt succeeds without
            writing twice.
        index: the run row's columns after this batch.
        inbox_seen: the last inbox entry the attempt has moved into the log.
        notify: signals for other runs' inboxes, written in the same transaction.
    """

    records: tuple[Record, ...]
    batch_id: str
    index: RunIndex
    inbox_seen: int = 0
    notify: tuple[Notify, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append returns: the run's latest inbox entry number."""

    inbox_last: int


@quick_init
@dataclass(frozen=True, slots=True)
class Append:
    """One run's batch in `Store.append_many`: what `Store.append` takes, as a value."""

    run_id: str
    attempt: int
    batch: Batch


@dataclass(frozen=True, slots=True)
class Claim:
    """A run taken under a lease by one attempt.

    Attributes:
        record: the `AttemptStarted` the claim wrote.
        inbox_last: the run's last inbox entry number as the claim found it (0: none), so
            that an attempt with nothing new in its inbox need not read it; None when the
            store does not say, and the attempt reads the inbox first. The store contract
            checks that a store's claim says it exactly.
        log: the run's records before `record`, when the store read them with the claim
            (a store may bring them for a run's first claim, whose log is its record 0
            alone), so that the attempt need not read its log again; exactly what `read`
            returns before `record.seq`, which the store contract checks. None: the attempt
            reads the log. A wrapper that changes what `read` returns (as `OffloadingStore`
            restores bodies kept as blobs) changes these records alike, or drops them.
    """

    run_id: str
    tenant: str
    attempt: int
    lease_expires_at: dt.datetime
    record: Record
    inbox_last: int | None = None
    log: tuple[Record, ...] | None = None


@dataclass(frozen=True, slots=True)
class RenewResult:
    """A renewed lease, and the run's latest inbox entry number."""

    lease_expires_at: dt.datetime
    inbox_last: int


@dataclass(frozen=True, slots=True)
class RunRow:
    """The run row: an index over the log, updated in the same transaction as each append.

    Never a second source of truth: status and the rest can always be re-derived by folding.
    """

    run_id: str
    tenant: str
    agent: str
    spec_version: str
    status: RunStatusName
    waiting: WaitingReason | None
    parent_run_id: str | None
    attempt: int
    lease_owner: str | None
    lease_expires_at: dt.datetime | None
    runnable_at: dt.datetime | None
    next_seq: int
    inbox_last: int
    created_at: dt.datetime
    updated_at: dt.datetime
    claims: int = 0
    """Claims since the run last suspended (or was created): what `max_attempts` limits."""


@dataclass(frozen=True, slots=True)
class RunQuery:
    """Filters and paging for `Store.list_runs`. Runs come newest first.

    Attributes:
        cursor: the `Page.next_cursor` of the previous page; None for the first.
    """

    status: RunStatusName | None = None
    parent_run_id: str | None = None
    cursor: str | None = None
    limit: int = 50


@dataclass(frozen=True, slots=True)
class Page[T]:
    """One page of a listing; `next_cursor` is None on the last page."""

    items: tuple[T, ...]
    next_cursor: str | None = None


def check_distinct_runs(appends: Sequence[Append]) -> None:
    """Refuse a group that names a run twice: its batches would depend on each other."""
    seen: set[str] = set()
    for one in appends:
        if one.run_id in seen:
            raise ValueError(
                f"append_many: run {one.run_id} appears twice in one group; a run's batches go "
                "one after another"
            )
        seen.add(one.run_id)


@runtime_checkable
class Store(Closing, Protocol):
    """Where runs live. One contract, every adapter (the suite in `psych_runtime.testing`).

    Atomicity: `create_run`, `append` and `claim` are each all or nothing.
    Ordering: a run's records have seqs 0, 1, 2, ... with no gap and no repeat.
    Fencing: only the run's current attempt may append; a superseded attempt gets `LeaseLost`,
    which takes precedence over every other refusal.
    Clocks: leases are set and compared on the database's clock where there is one. Safety
    never depends on clocks; they decide only when a lease is considered expired.
    Errors: adapters translate driver errors into the core's (`Conflict`, `LeaseLost`, ...);
    anything the store cannot reach is `StoreUnavailable`.
    Tenancy: calls that take a tenant see only that tenant's runs; another tenant's run looks
    exactly like a run that does not exist.

    Resources: `close` releases what the store holds (connections, threads); calling it again
    does nothing, and the store is not used after it. ``async with store:`` closes it at the
    end of the block.

    Adapters subclass this protocol explicitly to inherit `scoped`, `limits` (over the
    `_limits` they set), `close` (for a store that holds nothing) and ``async with``, and
    certify themselves with the contract suite,
    `psych_runtime.testing.store_contract.StoreContract`. The checks every adapter makes alike
    are in `psych_core.ports` too: `check_batch`, `judge_append`, `check_first_record`,
    `check_claim`.
    """

    _limits: StoreLimits
    """What `limits` returns: an adapter sets it in its constructor, or overrides `limits`."""

    @property
    def limits(self) -> StoreLimits:
        """The largest record and batch this store accepts."""
        return self._limits

    async def migrate(self) -> None:
        """Create or upgrade the schema: numbered steps, idempotent, safe run concurrently."""
        ...

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """Insert the run row and record 0 atomically; the run is runnable at once.

        With an idempotency key already used in the tenant, insert nothing and return
        ``(existing run id, False)``; with the same key and another `request_hash`, raise
        `IdempotencyConflict`. Keys are per tenant: another tenant's key never matches.
        Otherwise return ``(run.run_id, True)``: the run is ``queued``, attempt 0, next seq 1.

        Raises `Conflict` when `run.run_id` exists already, `RecordTooLarge` when `first` is
        over `limits`, and `StoreError` when `first` is not seq 0 of this run.
        """
        ...

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """Add `batch.records` and update the run row's index columns, all or nothing.

        The checks, in order (the first that fails decides the error):

        1. `RunNotFound` when the run does not exist.
        2. `LeaseLost` when `attempt` is not the run's current attempt. It takes precedence
           over every other refusal: a superseded attempt learns only that it must stop.
        3. A re-sent batch succeeds without writing: the record at the batch's first seq was
           written by a batch with the same `batch_id` from the same attempt.
        4. `LeaseLost` when the attempt no longer holds the lease (the run was released,
           suspended or ended).
        5. `Conflict` when the first record's seq is not the run's next seq (taken, or a gap);
           `StoreError` when the records are not one contiguous stretch of this run's log.
        6. `RecordTooLarge` when a record, the record count or the byte count is over
           `limits`; sizes are the UTF-8 bytes of each record's JSON.
        7. `InboxPending` when the batch suspends or ends the run and ``batch.inbox_seen`` is
           below the run's inbox count.

        Each `Notify` in ``batch.notify`` becomes an inbox entry of its run exactly as `signal`
        would make it (numbered, waking a waiting run), except that a key already used or a
        target run that has ended or does not exist is skipped, not an error: a re-sent or
        racing notice must not fail the append that carries it.

        A refused batch writes nothing. A batch whose `RunIndex.releases_lease` (it suspends
        or ends the run) releases the lease: no owner, ``runnable_at`` := ``index.due_at``
        (None: not claimable until woken).
        """
        ...

    async def append_many(self, appends: Sequence[Append]) -> list[AppendResult | PsychError]:
        """Append batches of different runs together (group commit): each is judged, written
        and refused exactly as `append` would judge, write and refuse it alone.

        Returns one outcome per append, in order: its `AppendResult`, or the error `append`
        would raise for it (`LeaseLost`, `Conflict`, `RunNotFound`, `StoreUnavailable` when
        its outcome is unknown, ...). A refused append writes nothing and refuses only itself:
        the others commit. Every run appears at most once (`ValueError` otherwise, before
        anything is written).

        This default appends them one after another. A store that can commit several runs'
        appends in one transaction or one round trip overrides it; the runtime's worker sends
        the appends its runs make while another is in flight through it.
        """
        check_distinct_runs(appends)
        outcomes: list[AppendResult | PsychError] = []
        for one in appends:
            try:
                outcomes.append(await self.append(one.run_id, one.attempt, one.batch))
            except PsychError as refused:
                outcomes.append(refused)
        return outcomes

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """The run's records with seq above `after_seq`, in seq order, at most `limit`.

        Records come back exactly as appended (equal `Record` values). A run that does not
        exist has no records: the result is empty.
        """
        ...

    async def claim(
        self,
        worker_id: str,
        ttl: dt.timedelta,
        *,
        run_id: str | None = None,
        max_attempts: int = 10,
    ) -> Claim | None:
        """Take the next run whose ``runnable_at`` has passed (or only `run_id`), or None.

        A run whose lease expired (it still names its lease owner: its worker died or lost it
        with the run started) comes first, so a crashed run does not wait behind a queue of
        new ones; then the oldest: the smallest ``runnable_at``, then the earliest created. A
        run that is leased, waiting on a person or ended is never taken.

        In one transaction: attempt += 1, status ``running``, lease owner := `worker_id`,
        ``runnable_at`` := lease expiry (now + `ttl`), and an `AttemptStarted` record appended
        at the run's next seq with the new attempt number, so attempt numbers have no gaps.
        Two claimers racing for one run: exactly one wins.

        A run already claimed `max_attempts` times since it last suspended (``claims``; a
        batch that suspends the run resets it to 0) is not started again: in the same
        transaction the claim appends `RunFailed` with reason ``attempts_exhausted`` (its
        attempt stays the last one's), leaves the run ``failed`` with no lease, and moves on
        to the next runnable run (with `run_id`: returns None).
        """
        ...

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        """Extend the lease of `attempt` to now + `ttl` (``runnable_at`` with it).

        `LeaseLost` when `attempt` is not current or no longer holds the lease (released,
        suspended, ended); `RunNotFound` when the run does not exist.
        """
        ...

    async def release(
        self, run_id: str, attempt: int, runnable_at: dt.datetime | None = None
    ) -> None:
        """Give up the lease of `attempt`; the run is claimable again at `runnable_at`
        (None: at once) with status ``queued``.

        `LeaseLost` when `attempt` is not current or no longer holds the lease;
        `RunNotFound` when the run does not exist.
        """
        ...

    async def signal(self, tenant: str, run_id: str, signal: Signal, key: str) -> int:
        """Add `signal` to the run's inbox and return its number, in one transaction.

        The number is the run row's ``inbox_last`` plus one (the row is updated in the same
        transaction), so numbers are 1, 2, 3, ... in commit order. `RunNotFound` when the run is
        not in `tenant`; `DuplicateSignal` when a signal with `key` was already accepted for
        this run (keys live as long as the run), whether or not the run has ended. A run that
        is ``waiting`` is woken: ``runnable_at`` := claimable at once ("-infinity"). A leased
        run hears of the signal through the ``inbox_last`` that `renew` and `append` return.

        A run that has ended raises `RunFinished`, except for a signal that
        `accepted_after_end` (a user message for the next run of its thread, or the
        `Continued` mark) while its inbox holds no entry with the key `CONTINUED_KEY`: that
        one is numbered like any other, and nothing else of the run changes (its status, its
        lease and ``runnable_at`` stay). The check and the insert are one transaction under
        the run row's lock, so a message racing the mark is either numbered before it or
        refused, never after it.
        """
        ...

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """The run's inbox entries numbered above `after`, in number order.

        Entries are kept for the run's life (deleting those already moved into the log is
        housekeeping, never needed for correctness); a run that does not exist has none.
        """
        ...

    async def due(self, now: dt.datetime, limit: int = 100) -> list[RunRow]:
        """Runs of every tenant that are ``waiting`` and claimable at `now` (a timed wait whose
        ``due_at`` has passed, or a woken run), oldest ``runnable_at`` first, at most `limit`."""
        ...

    async def get_run(self, tenant: str, run_id: str) -> RunRow | None:
        """The run row, or None when there is no such run in `tenant`."""
        ...

    async def list_runs(self, tenant: str, query: RunQuery) -> Page[RunRow]:
        """The tenant's runs, newest first (by creation), filtered and paged by `query`.

        Following `Page.next_cursor` visits every matching run once: no repeat and no gap,
        even when runs are created meanwhile (they are newer than the cursor).
        """
        ...

    async def put_spec(self, version: str, spec_json: str) -> None:
        """Store a spec's JSON under its version; storing it again changes nothing."""
        ...

    async def get_spec(self, version: str) -> str | None:
        """The JSON stored under `version`, or None."""
        ...

    async def delete_run(self, tenant: str, run_id: str) -> bool:
        """Delete the run, its records, its inbox and its idempotency key; False if none."""
        ...

    async def wait(self, run_id: str | None, after_seq: int, timeout: float) -> None:
        """Return when records after `after_seq` may exist for `run_id` (with None: when new
        work may exist; `after_seq` is then ignored), or after `timeout` seconds.

        Returning early is always allowed; callers re-read and wait again. A run that does
        not exist returns at once.
        """
        ...

    def scoped(
        self,
        scope: Scope,
        *,
        policy: Policy | None = None,
        secrets: SecretResolver | None = None,
        telemetry: Telemetry | None = None,
    ) -> ScopedStore:
        """This store, seen by `scope`: per-run calls see only the scope's tenant's runs.

        With a `policy`, every public function given the scoped store asks it first
        (`Policy.authorize`), and refuses with `PolicyDenied`. With `secrets` (the resolver
        the workers are given), every value it knows is redacted from what the public
        functions store: a dispatched input, a signal waiting in a run's inbox. With
        `telemetry` (the workers' `Runtime.telemetry`), `dispatch` records the trace it is
        called in (`Telemetry.traceparent`), so the run joins the caller's trace.
        """
        return ScopedStore(self, scope, policy=policy, secrets=secrets, telemetry=telemetry)


class ScopedStore:
    """A store seen by one `Scope`. Every public function that takes a run id takes one.

    Each per-run call checks the run row's tenant first and treats another tenant's run
    exactly like a run that does not exist (`RunNotFound`).

    The public functions use nothing else: they never reach through to the store underneath.

    Attributes:
        store: the store underneath, for what serves every tenant (a `Worker`, `due()`).
        scope: who the calls are for.
        policy: what the public functions ask before acting (`authorize`); None allows all.
        secrets: the values the public functions redact from what they store (a dispatched
            input, a signal's payload, note or arguments) before the store sees it.
        telemetry: where `dispatch` finds the trace it is called in; None: runs it admits
            start traces of their own.
    """

    __slots__ = ("policy", "scope", "secrets", "store", "telemetry")

    def __init__(
        self,
        store: Store,
        scope: Scope,
        *,
        policy: Policy | None = None,
        secrets: SecretResolver | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.store = store
        self.scope = scope
        self.policy = policy
        self.secrets = secrets
        self.telemetry = telemetry

    def authorize(self, action: PolicyAction, target: str) -> None:
        """Ask the policy whether this scope may do `action` to `target`; `PolicyDenied` if not.

        `target` is the agent's name for ``dispatch``, the run's id otherwise.
        """
        if self.policy is not None:
            self.policy.authorize(self.scope, action, target)

    @property
    def tenant(self) -> str:
        """The tenant every call is confined to."""
        return self.scope.tenant

    async def run(self, run_id: str) -> RunRow:
        """The run row; `RunNotFound` when there is none in this tenant."""
        row = await self.store.get_run(self.scope.tenant, run_id)
        if row is None:
            raise RunNotFound(run_id)
        return row

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """The run's records after `after_seq`; `RunNotFound` outside this tenant."""
        await self.run(run_id)
        return await self.store.read(run_id, after_seq, limit)

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """Create a run of this tenant; see `Store.create_run`. A run of another tenant is a
        `ValueError`: a scope admits only its own."""
        if run.tenant != self.scope.tenant:
            raise ValueError(
                f"run {run.run_id} is for tenant {run.tenant!r}, but this store is scoped to "
                f"tenant {self.scope.tenant!r}"
            )
        return await self.store.create_run(run, first)

    async def put_spec(self, version: str, spec_json: str) -> None:
        """Keep a spec under its version; see `Store.put_spec` (specs are content-addressed,
        the same for every tenant)."""
        await self.store.put_spec(version, spec_json)

    async def get_spec(self, version: str) -> str | None:
        """The spec kept under `version`, or None; see `Store.get_spec`."""
        return await self.store.get_spec(version)

    async def wait(self, run_id: str, after_seq: int, timeout: float) -> None:
        """Return early when records after `after_seq` may exist; see `Store.wait`. It tells
        nothing about the run (a caller reads it, through this store, to learn more), so it
        does not look the run up."""
        await self.store.wait(run_id, after_seq, timeout)

    async def list_runs(self, query: RunQuery | None = None) -> Page[RunRow]:
        """This tenant's runs, newest first."""
        return await self.store.list_runs(self.scope.tenant, query or RunQuery())

    async def signal(self, run_id: str, signal: Signal, key: str) -> int:
        """Add a signal to one of this tenant's runs' inbox; see `Store.signal`."""
        return await self.store.signal(self.scope.tenant, run_id, signal, key)

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """One of this tenant's runs' inbox entries numbered above `after`; `RunNotFound`
        outside this tenant."""
        await self.run(run_id)
        return await self.store.signals(run_id, after)

    async def delete_run(self, run_id: str) -> bool:
        """Delete one of this tenant's runs; False when there is none."""
        return await self.store.delete_run(self.scope.tenant, run_id)

    def __repr__(self) -> str:
        return f"ScopedStore({self.store!r}, tenant={self.scope.tenant!r})"
