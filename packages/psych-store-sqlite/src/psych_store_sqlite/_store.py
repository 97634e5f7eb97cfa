"""`SQLiteStore`: the embedded durable store, one file shared by the processes of one host."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sqlite3
from collections.abc import Sequence
from functools import partial

from psych_adapter_kit import Backoff, SpecTexts, poll_until
from psych_core import InboxEntry, NewRun, PsychError, Record, Signal, Store, StoreLimits
from psych_core.ports import (
    Append,
    AppendResult,
    Batch,
    Claim,
    Page,
    RenewResult,
    RunQuery,
    RunRow,
    SchemaVersion,
    check_claim,
    check_distinct_runs,
    check_first_record,
)
from psych_store_sqlite import _append, _inbox, _leases, _reads, _writes
from psych_store_sqlite._connection import open_connection, shared_file
from psych_store_sqlite._lane import Lane
from psych_store_sqlite._schema import LATEST_VERSION, VERSION_TABLE, migrate
from psych_store_sqlite._time import from_micros, now_micros, to_micros, ttl_micros

DEFAULT_LIMITS = StoreLimits()
"""What one append may carry unless the store is given other limits: `StoreLimits`'
defaults (4 MiB a record, 1000 records, 16 MiB in all)."""

_POLLING = Backoff(first=0.005, longest=0.2)


class SQLiteStore(Store):
    """A `Store` in one SQLite file, shared by any number of processes on one host.

    Every sqlite call runs off the event loop, on two threads the store owns: one writes,
    one reads. Each write runs in a ``BEGIN IMMEDIATE`` transaction, all or nothing; writes
    queued together (many runs in flight) share one transaction and one commit, each in a
    savepoint of its own. The file is in WAL mode with ``synchronous=FULL``: a write is on
    disk when the call returns, and readers never wait for writers. Processes that write at
    once take turns, each waiting up to `busy_timeout` seconds; past it the call raises
    `StoreUnavailable` (safe to retry).

    Leases are timed by the host's clock, read inside each write transaction; every process
    on the host reads the same clock. The file must be on a local disk: WAL does not work on
    network file systems, so do not share the file between hosts.

    Call `migrate` once before use (it is safe in every process at start-up), and `close`
    (or use ``async with``) when done. Create the store in the process that uses it: its
    threads do not survive a fork.

    Args:
        path: the database file; created when it does not exist.
        busy_timeout: seconds a write waits for another process's write transaction.
        limits: the largest record and batch one append may carry.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        limits: StoreLimits = DEFAULT_LIMITS,
    ) -> None:
        self._path = shared_file(
            path,
            busy_timeout,
            who="SQLiteStore",
            instead="psych_runtime.MemoryStore for a store that dies with the process",
        )
        self._busy_timeout = busy_timeout
        self._limits = limits
        self._specs = SpecTexts()
        self._writer = Lane(
            "psych-sqlite-write",
            partial(open_connection, self._path, busy_timeout, read_only=False),
            self._path,
            busy_timeout,
        )
        self._reader = Lane(
            "psych-sqlite-read",
            partial(open_connection, self._path, busy_timeout, read_only=True),
            self._path,
            busy_timeout,
        )

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    def __repr__(self) -> str:
        return f"SQLiteStore({self._path!r})"

    async def close(self) -> None:
        """Close both connections and end the store's threads. Calling it again does nothing."""
        try:
            await self._writer.close()
        finally:
            await self._reader.close()

    async def migrate(self) -> None:
        """Create or upgrade the schema: numbered steps in one transaction, safe to run at
        once from several processes."""
        await self._writer.run(migrate, self._path)

    async def schema_version(self) -> SchemaVersion:
        """The last migration the file has, against this package's newest; read-only.

        A file that does not exist, or is empty, is at 0 and stays as it is (no file, no
        table is made). Otherwise the read lane reads the version table, whose absence is 0.
        (Like the store's first call of any kind, it switches a database no `SQLiteStore` has
        opened yet to WAL mode; a file the store made is in WAL mode already.)
        """
        if not await asyncio.to_thread(_has_content, self._path):
            return SchemaVersion(applied=0, known=LATEST_VERSION)
        applied = await self._reader.run(_reads.schema_version, VERSION_TABLE)
        return SchemaVersion(applied=applied, known=LATEST_VERSION)

    async def pragmas(self) -> dict[str, str | int]:
        """The settings in force on the writing connection, for operators and tests:
        ``journal_mode``, ``synchronous`` (2 is FULL), ``busy_timeout`` (ms), ``foreign_keys``."""
        return await self._writer.run(_pragmas)

    # -- runs and their logs ----------------------------------------------------------------

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """Insert the run row and record 0 in one transaction; see `Store.create_run`."""
        checked = check_first_record(run, first, self._limits)
        (text,) = checked.texts()
        return await self._writer.transact(_writes.create_run, run, first, text, checked.problem)

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """Add a batch in one transaction; see `Store.append` for the checks and their order."""
        encoded = _append.encode(run_id, batch, self._limits)
        inbox_last = await self._writer.transact(_append.append, run_id, attempt, batch, encoded)
        return AppendResult(inbox_last)

    async def append_many(self, appends: Sequence[Append]) -> list[AppendResult | PsychError]:
        """Several runs' batches in one transaction, one savepoint each; see
        `Store.append_many`. The writer's queue would group concurrent appends too; one job
        makes sure the group is never split by the thread waking between them."""
        check_distinct_runs(appends)
        encoded: list[_append.Encoded | PsychError] = []
        for one in appends:
            try:
                encoded.append(_append.encode(one.run_id, one.batch, self._limits))
            except PsychError as refused:
                encoded.append(refused)
        sendable = [
            (one.run_id, one.attempt, one.batch, checked)
            for one, checked in zip(appends, encoded, strict=True)
            if not isinstance(checked, PsychError)
        ]
        written: list[int | PsychError] = []
        if sendable:
            try:
                written = await self._writer.transact(_append.append_each, sendable)
            except PsychError as failed:  # the transaction as a whole: nothing was written
                written = [failed] * len(sendable)
        outcomes = iter(written)
        return [
            checked if isinstance(checked, PsychError) else _result(next(outcomes))
            for checked in encoded
        ]

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """The records after `after_seq`, in seq order, at most `limit`."""
        return await self._reader.run(_reads.read, run_id, after_seq, limit)

    # -- leases -----------------------------------------------------------------------------

    async def claim(
        self,
        worker_id: str,
        ttl: dt.timedelta,
        *,
        run_id: str | None = None,
        max_attempts: int = 10,
    ) -> Claim | None:
        """Take the oldest claimable run in one transaction; see `Store.claim`."""
        check_claim(ttl, max_attempts)
        lease = ttl_micros(ttl)
        return await self._writer.transact(_leases.claim, worker_id, lease, run_id, max_attempts)

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        """Extend the lease of the current attempt; see `Store.renew`."""
        lease = ttl_micros(ttl)
        expires, inbox_last = await self._writer.transact(_leases.renew, run_id, attempt, lease)
        return RenewResult(from_micros(expires), inbox_last)

    async def release(
        self, run_id: str, attempt: int, runnable_at: dt.datetime | None = None
    ) -> None:
        """Give up the current attempt's lease; see `Store.release`."""
        at = None if runnable_at is None else to_micros(runnable_at, "runnable_at")
        await self._writer.transact(_leases.release, run_id, attempt, at)

    # -- the inbox --------------------------------------------------------------------------

    async def signal(self, tenant: str, run_id: str, signal: Signal, key: str) -> int:
        """Add a signal to the run's inbox in one transaction; see `Store.signal`."""
        return await self._writer.transact(_inbox.signal, tenant, run_id, signal, key)

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """The run's inbox entries numbered above `after`, in number order."""
        return await self._reader.run(_inbox.signals, run_id, after)

    async def due(self, now: dt.datetime, limit: int = 100) -> list[RunRow]:
        """Waiting runs of every tenant claimable at `now`, oldest first; see `Store.due`."""
        return await self._reader.run(_reads.due, to_micros(now, "now"), limit)

    # -- listing, specs, deletion -----------------------------------------------------------

    async def get_run(self, tenant: str, run_id: str) -> RunRow | None:
        """The run row, if the run exists in `tenant`."""
        return await self._reader.run(_reads.get_run, tenant, run_id)

    async def list_runs(self, tenant: str, query: RunQuery) -> Page[RunRow]:
        """The tenant's runs, newest first; see `Store.list_runs`."""
        return await self._reader.run(_reads.list_runs, tenant, query)

    async def put_spec(self, version: str, spec_json: str) -> None:
        """Keep a spec's JSON under its version; a version stored already is left as it is.

        A version this store has seen stored is not sent again (`SpecTexts`).
        """
        await self._specs.put(
            version, lambda: self._writer.transact(_writes.put_spec, version, spec_json)
        )

    async def get_spec(self, version: str) -> str | None:
        """The spec JSON stored under `version`; kept in memory once read (`SpecTexts`), so
        each attempt of a run does not read it again."""
        return await self._specs.get(version, lambda: self._reader.run(_reads.get_spec, version))

    async def delete_run(self, tenant: str, run_id: str) -> bool:
        """Delete the run, its records, its inbox and its idempotency key in one transaction."""
        return await self._writer.transact(_writes.delete_run, tenant, run_id)

    # -- waiting ----------------------------------------------------------------------------

    async def wait(self, run_id: str | None, after_seq: int, timeout: float) -> None:
        """Poll, backing off from 5 ms to 200 ms, until the run's log passes `after_seq` (with
        None: until some run is claimable), or `timeout` seconds pass."""

        async def ready() -> bool:
            if run_id is None:
                return await self._reader.run(_reads.claimable, now_micros())
            seq = await self._reader.run(_reads.next_seq, run_id)
            return seq is None or seq - 1 > after_seq

        await poll_until(ready, timeout, _POLLING)


def _has_content(path: str) -> bool:
    # Opening a missing file would create it, and an empty one would get a header written:
    # neither holds a schema, so neither is opened.
    try:
        return os.stat(path).st_size > 0
    except FileNotFoundError:
        return False


def _pragmas(conn: sqlite3.Connection) -> dict[str, str | int]:
    return {
        name: conn.execute(f"PRAGMA {name}").fetchone()[0]
        for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")
    }


def _result(outcome: int | PsychError) -> AppendResult | PsychError:
    """One append's outcome in a group: its inbox_last as an `AppendResult`, or its refusal."""
    return outcome if isinstance(outcome, PsychError) else AppendResult(outcome)
