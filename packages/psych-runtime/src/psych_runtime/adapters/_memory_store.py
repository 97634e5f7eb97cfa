"""`MemoryStore`: the store in the box. It dies with the process.

It is a first-class adapter: it passes the same contract suite as the database stores and is
the public test double. Records are kept as JSON text, exactly as a database store keeps them,
so what round-trips here round-trips there.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from psych_core import (
    CONTINUED_KEY,
    FINAL_STATUSES,
    Conflict,
    DuplicateSignal,
    IdempotencyConflict,
    InboxEntry,
    LeaseLost,
    Record,
    RunFinished,
    RunNotFound,
    RunStatusName,
    Signal,
    WaitingReason,
    accepted_after_end,
)
from psych_core.ports import (
    AppendFence,
    AppendResult,
    Batch,
    Claim,
    NewRun,
    Notify,
    Page,
    RenewResult,
    RunQuery,
    RunRow,
    Store,
    StoreLimits,
    check_batch,
    check_claim,
    check_first_record,
    check_ttl,
    cursor_position,
    exhausted_record,
    first_claim_log,
    judge_append,
    page_of,
    record_json,
    started_record,
)

NEVER_BEFORE = dt.datetime.min.replace(tzinfo=dt.UTC)
"""``runnable_at`` of a run that is claimable at once ("-infinity")."""


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


_ROW_FIELDS = tuple(row_field.name for row_field in fields(RunRow))
"""`RunRow`'s fields in its order, which `_Row` keeps (a test holds them equal)."""


@dataclass(slots=True)
class _Row:
    """The run row as this store keeps it: `RunRow`'s fields, in its order, changed in place
    by each append (a frozen `RunRow` built again at every step was a fortieth of the step's
    CPU); handed out as a `RunRow` (`frozen`)."""

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

    def frozen(self) -> RunRow:
        """The row as the `Store` port hands it out: a value, not this store's own."""
        return RunRow(*[getattr(self, name) for name in _ROW_FIELDS])


def _fence(row: _Row) -> AppendFence:
    leased = row.lease_owner is not None and row.status not in FINAL_STATUSES
    return AppendFence(row.attempt, row.next_seq, leased, row.inbox_last)


@dataclass
class _Run:
    row: _Row
    order: int
    idempotency_key: str | None
    request_hash: str | None
    log: list[bytes] = field(default_factory=list)  # each record's JSON, as UTF-8
    # first seq of each appended batch -> (batch_id, attempt): how a re-sent batch is recognised
    batches: dict[int, tuple[str, int]] = field(default_factory=dict)
    inbox: list[str] = field(default_factory=list)  # InboxEntry JSON, entry n at index n - 1
    signal_keys: set[str] = field(default_factory=set)


class _ClaimOrder:
    """The open runs in the order a claim takes them, so that a claim costs a heap's few
    steps, not a look at every open run (a test suite that admits thousands of runs would
    otherwise pay for each claim as much as for all of them).

    A run whose lease expired (it still names its owner) comes first: its worker died with it
    started. Then the smallest ``runnable_at``, then the earliest created. Two heaps hold
    them: leased runs by their lease's expiry, the others by ``runnable_at``; each entry is a
    run's key when it was put in, so the store puts a run in again whenever its key changes
    (`put`), and an entry that no longer matches its run (claimed, renewed, ended, deleted
    since) is dropped when it comes to the top. The heaps are rebuilt from the open runs when
    such leftovers outnumber them, so they stay within a few times the open runs.
    """

    def __init__(self, open_runs: dict[str, _Run]) -> None:
        self._open = open_runs  # the store's own: runs leave it when they end or are deleted
        # (runnable_at, the run's creation number, its id): a run deleted and admitted again
        # under the same id is a new run, with a new number.
        self._leased: list[tuple[dt.datetime, int, str]] = []
        self._free: list[tuple[dt.datetime, int, str]] = []

    def put(self, run: _Run) -> None:
        """Hold `run` at its key now (nothing, when it is not claimable at any time)."""
        if self._hold(run) and len(self._leased) + len(self._free) > 2 * len(self._open) + 64:
            self._leased, self._free = [], []
            for held in self._open.values():
                self._hold(held)

    def first(self, now: dt.datetime) -> _Run | None:
        """The run a claim takes at `now`, if any. Its entry stays: the claim changes the
        run's key, which makes the entry a leftover."""
        for heap, leased in ((self._leased, True), (self._free, False)):
            while heap:
                at, order, run_id = heap[0]
                run = self._open.get(run_id)
                if (
                    run is None
                    or run.order != order
                    or run.row.runnable_at != at
                    or (run.row.lease_owner is not None) != leased
                ):
                    heapq.heappop(heap)  # a leftover: the run moved on since
                    continue
                if at <= now:
                    return run
                break
        return None

    def _hold(self, run: _Run) -> bool:
        """Push `run`'s entry on its heap; False when it has none (never claimable again)."""
        row = run.row
        if row.runnable_at is None or row.status in FINAL_STATUSES:
            return False
        heap = self._free if row.lease_owner is None else self._leased
        heapq.heappush(heap, (row.runnable_at, run.order, row.run_id))
        return True


class MemoryStore(Store):
    """A `Store` in this process's memory.

    Args:
        clock: a function returning the current UTC time; tests inject one to move leases.
    """

    def __init__(self, *, clock: Callable[[], dt.datetime] | None = None) -> None:
        self._clock = clock or _utc_now
        self._runs: dict[str, _Run] = {}
        # The runs that have not ended and are not deleted: a run leaves when it ends or is
        # deleted; the claim order is rebuilt from these.
        self._open: dict[str, _Run] = {}
        self._claim_order = _ClaimOrder(self._open)
        self._keys: dict[tuple[str, str], str] = {}
        self._specs: dict[str, str] = {}
        self._order = 0
        # Changed (set, then replaced) at every write that a `wait` may be waiting for, and
        # only when one is: a write with nobody waiting costs no wake-up.
        self._changed = asyncio.Event()
        self._waiters = 0
        self._limits = StoreLimits(
            max_record_bytes=16 * 1024 * 1024,
            max_append_records=1000,
            max_append_bytes=64 * 1024 * 1024,
        )

    def __repr__(self) -> str:
        return f"MemoryStore(runs={len(self._runs)})"

    async def migrate(self) -> None:
        """Nothing to create: memory has no schema."""

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """Insert the run row and record 0; see `Store.create_run`."""
        if run.idempotency_key is not None:
            existing = self._keys.get((run.tenant, run.idempotency_key))
            if existing is not None:
                held = self._runs[existing]
                if held.request_hash != run.request_hash:
                    raise IdempotencyConflict(run.idempotency_key, existing)
                return existing, False
        if run.run_id in self._runs:
            raise Conflict(run.run_id, 0)
        checked = check_first_record(run, first, self._limits)
        if checked.problem is not None:
            raise checked.problem
        now = self._clock()
        self._order += 1
        row = _Row(
            run_id=run.run_id,
            tenant=run.tenant,
            agent=run.agent,
            spec_version=run.spec_version,
            status="queued",
            waiting=None,
            parent_run_id=run.parent_run_id,
            attempt=0,
            lease_owner=None,
            lease_expires_at=None,
            runnable_at=NEVER_BEFORE,
            next_seq=1,
            inbox_last=0,
            created_at=now,
            updated_at=now,
        )
        kept = self._runs[run.run_id] = _Run(
            row, self._order, run.idempotency_key, run.request_hash
        )
        kept.log.extend(checked.bodies)
        self._open[run.run_id] = kept
        self._claim_order.put(kept)
        if run.idempotency_key is not None:
            self._keys[(run.tenant, run.idempotency_key)] = run.run_id
        self._notify()
        return run.run_id, True

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """Add a batch atomically; see `Store.append` for the checks and their order."""
        checked = check_batch(run_id, batch, self._limits)
        run = self._runs.get(run_id)
        fence = None if run is None else _fence(run.row)
        first = batch.records[0].seq if batch.records else 0
        done = judge_append(
            run_id,
            attempt,
            batch,
            checked.problem,
            fence,
            lambda: run is not None and run.batches.get(first) == (batch.batch_id, attempt),
        )
        if done is not None:
            return AppendResult(done)
        assert run is not None  # judge_append refuses a run that does not exist
        row = run.row
        bodies = checked.bodies
        index = batch.index
        run.log.extend(bodies)
        run.batches[first] = (batch.batch_id, attempt)
        row.status = index.status
        row.waiting = index.waiting
        row.next_seq = first + len(bodies)
        row.updated_at = self._clock()
        if index.releases_lease:
            row.lease_owner = row.lease_expires_at = None
            row.runnable_at = index.due_at
            self._claim_order.put(run)
        if index.status == "waiting":
            row.claims = 0
        if index.status in FINAL_STATUSES:
            self._open.pop(run_id, None)
        for notice in batch.notify:
            self._deliver(notice, row.updated_at)
        self._notify()
        return AppendResult(row.inbox_last)

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """The records after `after_seq`, in order."""
        run = self._runs.get(run_id)
        if run is None:
            return []
        start = max(after_seq + 1, 0)
        end = len(run.log) if limit is None else min(len(run.log), start + limit)
        return [Record.model_validate_json(body) for body in run.log[start:end]]

    async def claim(
        self,
        worker_id: str,
        ttl: dt.timedelta,
        *,
        run_id: str | None = None,
        max_attempts: int = 10,
    ) -> Claim | None:
        """Take the oldest claimable run; see `Store.claim`."""
        check_claim(ttl, max_attempts)
        now = self._clock()
        exhausted = False
        while (run := self._claimable(run_id, now)) is not None:
            if run.row.claims >= max_attempts:
                self._exhaust(run, max_attempts, now)  # it ends, and leaves the claim order
                exhausted = True
                continue
            claim = self._start(run, worker_id, ttl, now)
            self._claim_order.put(run)
            self._notify()
            return claim
        if exhausted:
            self._notify()
        return None

    def _claimable(self, run_id: str | None, now: dt.datetime) -> _Run | None:
        """The run a claim takes at `now` (only `run_id`, when given), if any."""
        if run_id is None:
            return self._claim_order.first(now)
        run = self._runs.get(run_id)
        if run is None:
            return None
        row = run.row
        ready = row.runnable_at is not None and row.runnable_at <= now
        return run if ready and row.status not in FINAL_STATUSES else None

    def _start(self, run: _Run, worker_id: str, ttl: dt.timedelta, now: dt.datetime) -> Claim:
        row = run.row
        attempt = row.attempt + 1
        expires = now + ttl
        record = started_record(row.run_id, row.next_seq, attempt, now, worker_id)
        # A first claim brings the log before it (record 0 alone), as the SQL stores do.
        log = first_claim_log(run.log[0]) if row.next_seq == 1 else None
        run.log.append(record_json(record))
        run.row = replace(
            row,
            attempt=attempt,
            status="running",
            waiting=None,
            lease_owner=worker_id,
            lease_expires_at=expires,
            runnable_at=expires,
            next_seq=row.next_seq + 1,
            updated_at=now,
            claims=row.claims + 1,
        )
        return Claim(row.run_id, row.tenant, attempt, expires, record, row.inbox_last, log)

    def _exhaust(self, run: _Run, max_attempts: int, now: dt.datetime) -> None:
        row = run.row
        self._open.pop(row.run_id, None)
        record = exhausted_record(
            row.run_id, row.next_seq, row.attempt, now, row.claims, max_attempts
        )
        run.log.append(record_json(record))
        run.row = replace(
            row,
            status="failed",
            waiting=None,
            lease_owner=None,
            lease_expires_at=None,
            runnable_at=None,
            next_seq=row.next_seq + 1,
            updated_at=now,
        )

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        """Extend the lease of the current attempt."""
        check_ttl(ttl)
        run = self._get(run_id)
        if run.row.attempt != attempt or run.row.lease_owner is None:
            raise LeaseLost(run_id, attempt, run.row.attempt)
        expires = self._clock() + ttl
        run.row = replace(run.row, lease_expires_at=expires, runnable_at=expires)
        self._claim_order.put(run)
        return RenewResult(expires, run.row.inbox_last)

    async def release(
        self, run_id: str, attempt: int, runnable_at: dt.datetime | None = None
    ) -> None:
        """Give up the current attempt's lease."""
        run = self._get(run_id)
        if run.row.attempt != attempt or run.row.lease_owner is None:
            raise LeaseLost(run_id, attempt, run.row.attempt)
        run.row = replace(
            run.row,
            lease_owner=None,
            lease_expires_at=None,
            runnable_at=runnable_at or NEVER_BEFORE,
            status="queued",
            waiting=None,
            updated_at=self._clock(),
        )
        self._claim_order.put(run)
        self._notify()

    async def signal(self, tenant: str, run_id: str, signal: Signal, key: str) -> int:
        """Add a signal to the run's inbox; see `Store.signal`."""
        run = self._runs.get(run_id)
        if run is None or run.row.tenant != tenant:
            raise RunNotFound(run_id)
        if key in run.signal_keys:
            raise DuplicateSignal(run_id, key)
        # An ended run takes only messages for its next run, until it is continued.
        ended = run.row.status in FINAL_STATUSES
        if ended and (not accepted_after_end(signal) or CONTINUED_KEY in run.signal_keys):
            raise RunFinished(run_id, run.row.status)
        number = self._enqueue(run, key, signal, self._clock())
        self._notify()
        return number

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """The run's inbox entries numbered above `after`."""
        run = self._runs.get(run_id)
        if run is None:
            return []
        return [InboxEntry.model_validate_json(text) for text in run.inbox[max(after, 0) :]]

    async def due(self, now: dt.datetime, limit: int = 100) -> list[RunRow]:
        """Waiting runs claimable at `now`, oldest first."""
        found = [
            run
            for run in self._open.values()
            if run.row.status == "waiting"
            and run.row.runnable_at is not None
            and run.row.runnable_at <= now
        ]
        found.sort(key=lambda r: (r.row.runnable_at or NEVER_BEFORE, r.order))
        return [run.row.frozen() for run in found[:limit]]

    async def get_run(self, tenant: str, run_id: str) -> RunRow | None:
        """The run row, if the run exists in `tenant`."""
        run = self._runs.get(run_id)
        if run is None or run.row.tenant != tenant:
            return None
        return run.row.frozen()

    async def list_runs(self, tenant: str, query: RunQuery) -> Page[RunRow]:
        """The tenant's runs, newest first."""
        before = None if query.cursor is None else cursor_position(query.cursor)
        matching = [
            run
            for run in sorted(self._runs.values(), key=lambda r: r.order, reverse=True)
            if run.row.tenant == tenant
            and (before is None or run.order < before)
            and (query.status is None or run.row.status == query.status)
            and (query.parent_run_id is None or run.row.parent_run_id == query.parent_run_id)
        ]
        return page_of(matching, query.limit, lambda run: run.row.frozen(), lambda run: run.order)

    async def put_spec(self, version: str, spec_json: str) -> None:
        """Keep a spec's JSON under its version."""
        self._specs.setdefault(version, spec_json)

    async def get_spec(self, version: str) -> str | None:
        """The spec JSON stored under `version`."""
        return self._specs.get(version)

    async def delete_run(self, tenant: str, run_id: str) -> bool:
        """Forget the run, its log, its inbox and its idempotency key."""
        run = self._runs.get(run_id)
        if run is None or run.row.tenant != tenant:
            return False
        del self._runs[run_id]
        if self._open.get(run_id) is run:
            del self._open[run_id]
        if run.idempotency_key is not None:
            self._keys.pop((tenant, run.idempotency_key), None)
        return True

    async def wait(self, run_id: str | None, after_seq: int, timeout: float) -> None:
        """Return when the log of `run_id` passes `after_seq` (or any change, for None)."""

        def ready() -> bool:
            run = self._runs.get(run_id) if run_id is not None else None
            return run is None or run.row.next_seq - 1 > after_seq

        if run_id is not None and ready():
            return
        self._waiters += 1
        try:
            async with asyncio.timeout(timeout):
                await self._changed.wait()
                while run_id is not None and not ready():
                    await self._changed.wait()
        except TimeoutError:
            return
        finally:
            self._waiters -= 1

    # -- internals --------------------------------------------------------------------------

    def _enqueue(self, run: _Run, key: str, signal: Signal, now: dt.datetime) -> int:
        number = run.row.inbox_last + 1
        entry = InboxEntry(run_id=run.row.run_id, number=number, key=key, signal=signal, at=now)
        run.inbox.append(entry.model_dump_json())
        run.signal_keys.add(key)
        changes: dict[str, object] = {"inbox_last": number}
        waiting = run.row.status == "waiting"
        if waiting:
            changes["runnable_at"] = NEVER_BEFORE
        run.row = replace(run.row, **changes)  # type: ignore[arg-type]
        if waiting:
            self._claim_order.put(run)
        return number

    def _deliver(self, notice: Notify, now: dt.datetime) -> None:
        # A notice that no longer applies is dropped: its append must not fail for it.
        run = self._runs.get(notice.run_id)
        if run is None or run.row.status in FINAL_STATUSES or notice.key in run.signal_keys:
            return
        self._enqueue(run, notice.key, notice.signal, now)

    def _get(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise RunNotFound(run_id)
        return run

    def _notify(self) -> None:
        if self._waiters:
            self._changed.set()
            self._changed = asyncio.Event()
