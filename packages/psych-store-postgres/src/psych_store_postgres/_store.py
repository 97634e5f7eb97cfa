"""`PostgresStore`: runs, logs, leases and inboxes in PostgreSQL, for workers on any number of
hosts."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Sequence
from functools import partial

from psych_adapter_kit import Backoff, SpecTexts, let_finish
from psych_core import (
    InboxEntry,
    NewRun,
    PsychError,
    Record,
    Signal,
    Store,
    StoreLimits,
    StoreUnavailable,
)
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
    check_ttl,
    cursor_position,
    page_of,
)
from psych_store_postgres import _group, _inbox, _leases, _log
from psych_store_postgres._connections import Connection, Connections, Settings, describe_dsn
from psych_store_postgres._errors import ClaimUnknown
from psych_store_postgres._listener import Listener
from psych_store_postgres._rows import check_aware, run_row
from psych_store_postgres._schema import LATEST_VERSION, current_version, migrate
from psych_store_postgres._sql import RUN_COLUMNS, Sql

DEFAULT_LIMITS = StoreLimits()
"""What one append may carry unless the store is given other limits: `StoreLimits`'
defaults (4 MiB a record, 1000 records, 16 MiB in all)."""

_POLLING = Backoff(first=0.005, longest=0.2)
"""How `wait` polls while the store cannot listen."""
_WATCH_FOR = 60.0
"""Seconds a `wait` on a run keeps it watched (its appends notify) past its own timeout."""


class PostgresStore(Store):
    """A `Store` in a PostgreSQL database, shared by workers and handlers on any number of hosts.

    The store opens its connection pool on first use, in the running event loop (and keeps
    `min_size` connections open while idle), and needs nothing else: create it, call `migrate`
    once at start-up (safe in every process at once), use it, and `close` it (or use
    ``async with``). One store per process and event loop.

    Every append is one statement and one round trip in autocommit: it checks the attempt, the
    lease, the next seq and (when it suspends or ends the run) the inbox count, updates the run
    row, inserts the records and delivers the batch's notices, or writes nothing. Several runs'
    appends given to `append_many` are one statement and one commit together (group commit),
    each fenced as if alone. A claim is one statement that takes the oldest claimable run with
    ``FOR UPDATE SKIP LOCKED`` and starts its attempt; a claim whose answer was lost is sent
    again and recognised by its token.
    Leases are set and compared on the database's clock. Idle workers and live readers are
    woken by LISTEN/NOTIFY on a connection of the store's own, and poll when it is down.

    A connection that cannot be had (the server restarting, refusing, full) is waited for, with
    backoff, up to `retry_for` seconds; an append whose connection broke in flight is sent
    again and recognised by its batch id if it had landed. What cannot be made safe that way
    raises `StoreUnavailable` saying so.

    Args:
        dsn: a libpq connection string or URL, e.g. ``postgresql://psych@db:5432/app``
            (asyncpg reads the usual ``PG*`` environment variables and ``~/.pgpass`` too).
        schema: the schema that holds the store's tables; `migrate` creates it. Stores with
            different schemas in one database are independent.
        min_size: connections the pool keeps open.
        max_size: connections the pool opens at most. The store also opens one more, to
            listen for notifications.
        limits: the largest record and batch one append may carry.
        connect_timeout: seconds to open a connection.
        command_timeout: seconds a statement may take before the call gives up (None: no
            limit).
        retry_for: seconds an operation keeps trying through connection failures before it
            raises `StoreUnavailable`.
        application_name: how the store's connections appear in ``pg_stat_activity``.
        listen_dsn: where the listening connection goes, when `dsn` is a pooler that does
            not keep sessions (LISTEN needs one); `dsn` by default.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "psych",
        min_size: int = 0,
        max_size: int = 10,
        limits: StoreLimits = DEFAULT_LIMITS,
        connect_timeout: float = 5.0,
        command_timeout: float | None = 30.0,
        retry_for: float = 10.0,
        application_name: str = "psych-store",
        listen_dsn: str | None = None,
    ) -> None:
        self._sql = Sql.for_schema(schema)
        self._where = describe_dsn(dsn, schema)
        self._limits = limits
        self._connections = Connections(
            Settings(
                dsn=dsn,
                listen_dsn=listen_dsn or dsn,
                min_size=min_size,
                max_size=max_size,
                connect_timeout=connect_timeout,
                command_timeout=command_timeout,
                retry_for=retry_for,
                application_name=application_name,
            ),
            self._where,
        )
        self._specs = SpecTexts()
        self._listener = Listener(
            self._connections.connect,
            self._sql.work_channel,
            self._sql.records_channel,
            self._where,
        )

    @property
    def schema(self) -> str:
        """The schema that holds the store's tables."""
        return self._sql.schema

    def __repr__(self) -> str:
        return f"PostgresStore({self._where})"

    async def close(self) -> None:
        """Stop listening and close the pool. Calling it again does nothing."""
        try:
            await self._listener.close()
        finally:
            await self._connections.close()

    async def migrate(self) -> None:
        """Create or upgrade the schema: numbered steps in one transaction under an advisory
        lock, so processes that run it at once take turns and the last ones change nothing."""
        schema = self._sql.schema
        await self._connections.run(
            "migrate()",
            lambda conn, _again: migrate(conn, schema, self._where),
            resend=True,
        )

    async def schema_version(self) -> SchemaVersion:
        """The last migration the schema has, against this package's newest; read-only: a
        schema (or version table) that does not exist is at 0 and is not created, and the
        migration lock is not taken."""
        schema = self._sql.schema
        applied = await self._connections.run(
            "schema_version()",
            lambda conn, _again: current_version(conn, schema),
            resend=True,
        )
        return SchemaVersion(applied=applied, known=LATEST_VERSION)

    # -- runs and their logs ----------------------------------------------------------------

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """Insert the run row and record 0 in one statement; see `Store.create_run`."""
        checked = check_first_record(run, first, self._limits)
        (body,) = checked.bodies
        return await self._connections.run(
            f"create_run({run.run_id})",
            lambda conn, again: _log.create_run(
                conn, self._sql, run, first, body, checked.problem, again
            ),
            resend=True,
        )

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """Add a batch in one statement; see `Store.append` for the checks and their order.

        Sent again after a connection broke in flight: a batch that had landed is recognised by
        its id, so it is never written twice.
        """
        return await self._append_alone(
            _group.prepare(Append(run_id, attempt, batch), self._limits)
        )

    async def append_many(self, appends: Sequence[Append]) -> list[AppendResult | PsychError]:
        """Append several runs' batches in one statement and one commit; see
        `Store.append_many`.

        The batches with records and no notices go in one group statement; the rest, and any
        the group statement refuses or loses, go through `append` one each (at the same time),
        so every refusal is the one `append` gives. A group of one is an `append`.
        """
        check_distinct_runs(appends)
        group = [_group.prepare(one, self._limits) for one in appends]
        return await _group.append_many(self._connections, self._sql, group, self._append_alone)

    async def _append_alone(self, prepared: _group.Prepared) -> AppendResult:
        """`append`'s one path, for a batch already checked and serialised."""
        one, encoded = prepared.append, prepared.encoded
        first = one.batch.records[0].seq if one.batch.records else 0
        inbox_last = await self._connections.run(
            f"the append of run {one.run_id}, seq {first}",
            lambda conn, _again: _log.append(
                conn, self._sql, one.run_id, one.attempt, one.batch, encoded
            ),
            resend=True,
        )
        return AppendResult(inbox_last)

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """The records after `after_seq`, in seq order, at most `limit`."""
        return await self._connections.run(
            f"read({run_id})",
            lambda conn, _again: _log.read(conn, self._sql, run_id, after_seq, limit),
            resend=True,
        )

    # -- leases -----------------------------------------------------------------------------

    async def claim(
        self,
        worker_id: str,
        ttl: dt.timedelta,
        *,
        run_id: str | None = None,
        max_attempts: int = 10,
    ) -> Claim | None:
        """Take the oldest claimable run in one statement (one given run, or a run to fail
        after `max_attempts` claims, in one short transaction); see `Store.claim`."""
        check_claim(ttl, max_attempts)
        what = f"claim() by worker {worker_id}"
        if run_id is None:
            taken = await self._connections.run(
                what,
                partial(
                    _leases.claim_any,
                    sql=self._sql,
                    worker_id=worker_id,
                    ttl=ttl,
                    max_attempts=max_attempts,
                    token=_leases.claim_token(),
                ),
                resend=True,
            )
            if taken is None or isinstance(taken, Claim):
                return taken
        while True:
            try:
                return await self._connections.run(
                    what,
                    lambda conn, _again: _leases.claim(
                        conn, self._sql, worker_id, ttl, run_id, max_attempts
                    ),
                    resend=False,
                )
            except ClaimUnknown as unknown:
                # The COMMIT went unanswered: the AttemptStarted record tells whether it landed.
                if await self._connections.run(
                    what, partial(_leases.landed, sql=self._sql, unknown=unknown), resend=True
                ):
                    return unknown.claim

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        """Extend the current attempt's lease on the database's clock; see `Store.renew`."""
        check_ttl(ttl)
        return await self._connections.run(
            f"renew({run_id}, attempt {attempt})",
            lambda conn, _again: _leases.renew(conn, self._sql, run_id, attempt, ttl),
            resend=True,
        )

    async def release(
        self, run_id: str, attempt: int, runnable_at: dt.datetime | None = None
    ) -> None:
        """Give up the current attempt's lease; see `Store.release`."""
        if runnable_at is not None:
            check_aware(runnable_at, "runnable_at")
        await self._connections.run(
            f"release({run_id}, attempt {attempt})",
            lambda conn, again: _leases.release(
                conn, self._sql, run_id, attempt, runnable_at, again
            ),
            resend=True,
        )

    # -- the inbox --------------------------------------------------------------------------

    async def signal(self, tenant: str, run_id: str, signal: Signal, key: str) -> int:
        """Add a signal to the run's inbox in one statement (to a run that has ended: a short
        transaction); see `Store.signal`."""
        return await self._connections.run(
            f"signal({run_id}, key {key!r})",
            lambda conn, again: _inbox.signal(conn, self._sql, tenant, run_id, signal, key, again),
            resend=True,
        )

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """The run's inbox entries numbered above `after`."""
        return await self._connections.run(
            f"signals({run_id})",
            lambda conn, _again: _inbox.signals(conn, self._sql, run_id, after),
            resend=True,
        )

    async def due(self, now: dt.datetime, limit: int = 100) -> list[RunRow]:
        """Waiting runs of every tenant claimable at `now`, oldest first."""
        check_aware(now, "now")
        return await self._connections.run(
            "due()",
            lambda conn, _again: _inbox.due(conn, self._sql, now, limit),
            resend=True,
        )

    # -- listing, specs, deletion -----------------------------------------------------------

    async def get_run(self, tenant: str, run_id: str) -> RunRow | None:
        """The run row, if the run exists in `tenant`."""

        async def op(conn: Connection, _again: bool) -> RunRow | None:
            row = await conn.fetchrow(self._sql.get_run, run_id, tenant)
            return None if row is None else run_row(row)

        return await self._connections.run(f"get_run({run_id})", op, resend=True)

    async def list_runs(self, tenant: str, query: RunQuery) -> Page[RunRow]:
        """The tenant's runs, newest first; the cursor is the creation number of the last."""
        where = ["tenant = $1"]
        params: list[object] = [tenant]
        if query.status is not None:
            params.append(query.status)
            where.append(f"status = ${len(params)}")
        if query.parent_run_id is not None:
            params.append(query.parent_run_id)
            where.append(f"parent_run_id = ${len(params)}")
        if query.cursor is not None:
            params.append(cursor_position(query.cursor))
            where.append(f"n < ${len(params)}")
        size = max(query.limit, 0)
        params.append(size + 1)
        statement = (
            f"SELECT {RUN_COLUMNS} FROM {self._sql.schema}.runs WHERE {' AND '.join(where)} "
            f"ORDER BY n DESC LIMIT ${len(params)}"
        )

        async def op(conn: Connection, _again: bool) -> Page[RunRow]:
            rows = await conn.fetch(statement, *params)
            return page_of(rows, size, run_row, lambda row: int(row["n"]))

        return await self._connections.run(f"list_runs({tenant!r})", op, resend=True)

    async def put_spec(self, version: str, spec_json: str) -> None:
        """Keep a spec's JSON under its version; a version stored already is left as it is.

        A version this store has seen stored is not sent again (`SpecTexts`).
        """

        async def op(conn: Connection, _again: bool) -> None:
            await conn.execute(self._sql.put_spec, version, spec_json)

        await self._specs.put(
            version, lambda: self._connections.run(f"put_spec({version})", op, resend=True)
        )

    async def get_spec(self, version: str) -> str | None:
        """The spec JSON stored under `version`; kept in memory once read (`SpecTexts`), so
        each attempt of a run does not read it again."""

        async def op(conn: Connection, _again: bool) -> str | None:
            found = await conn.fetchval(self._sql.get_spec, version)
            return None if found is None else str(found)

        return await self._specs.get(
            version, lambda: self._connections.run(f"get_spec({version})", op, resend=True)
        )

    async def delete_run(self, tenant: str, run_id: str) -> bool:
        """Delete the run, its records, its inbox and its idempotency key in one transaction."""

        async def op(conn: Connection, _again: bool) -> bool:
            async with conn.transaction():
                if await conn.fetchval(self._sql.delete_run, run_id, tenant) is None:
                    return False
                await conn.execute(self._sql.delete_records, run_id)
                await conn.execute(self._sql.delete_inbox, run_id)
            return True

        return await self._connections.run(
            f"delete_run({run_id})",
            op,
            resend=False,
            hint="call delete_run again: it returns False if the run was deleted",
        )

    # -- waiting ----------------------------------------------------------------------------

    async def wait(self, run_id: str | None, after_seq: int, timeout: float) -> None:
        """Return when records after `after_seq` may exist for `run_id` (with None: when a run
        may be claimable), or after `timeout` seconds.

        Woken by NOTIFY at once; a wait for work also returns when the earliest lease or timed
        wait comes due. While the store cannot listen, it polls (5 ms, doubling to 200 ms).
        A wait on a run marks it watched for a minute past `timeout`, so its appends notify.
        Cancelled while it asks the database, it stops at once and lets the ask finish
        (`let_finish`): asyncpg would otherwise ask the server to cancel it, on a connection
        of its own.
        """
        deadline = time.monotonic() + max(timeout, 0.0)
        with self._listener.subscription(run_id) as woken:
            await self._listener.start()
            delay = _POLLING.first
            while True:
                woken.clear()
                try:
                    ready, due_in = await let_finish(self._ready(run_id, after_seq, timeout))
                except StoreUnavailable:
                    ready, due_in = False, None
                remaining = deadline - time.monotonic()
                if ready or remaining <= 0:
                    return
                pause = remaining if due_in is None else min(remaining, max(due_in, 0.001))
                if not self._listener.listening:
                    pause = min(pause, delay)
                    delay = _POLLING.after(delay)
                try:
                    async with asyncio.timeout(pause):
                        await woken.wait()
                except TimeoutError:
                    continue
                return

    async def _ready(
        self, run_id: str | None, after_seq: int, timeout: float
    ) -> tuple[bool, float | None]:
        """(whether to return now, seconds until work may appear without a notification)."""
        if run_id is None:

            async def work(conn: Connection, _again: bool) -> tuple[bool, float | None]:
                row = await conn.fetchrow(self._sql.work_ahead)
                if row is None:
                    return False, None
                return bool(row["ready"]), row["seconds"]

            return await self._connections.run("wait(None)", work, resend=True)

        async def records(conn: Connection, _again: bool) -> tuple[bool, float | None]:
            # Watched for the wait (an hour at most: a longer one renews the mark when it
            # comes back) plus a minute, renewed when less than the wait's length is left.
            length = min(max(timeout, 0.0), 3600.0)
            next_seq = await conn.fetchval(self._sql.watch_run, run_id, length, length + _WATCH_FOR)
            return next_seq is None or next_seq - 1 > after_seq, length or None

        return await self._connections.run(f"wait({run_id})", records, resend=True)
