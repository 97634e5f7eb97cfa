"""`MySQLStore`: runs, their logs and their leases in MySQL 8 or MariaDB 10.6+."""

from __future__ import annotations

import datetime as dt
import math
import ssl
import urllib.parse
from collections.abc import Sequence

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
    check_ttl,
    cursor_position,
)
from psych_store_mysql import _append, _group, _inbox, _leases, _reads, _runs
from psych_store_mysql._driver import Connection, Settings
from psych_store_mysql._literals import identifier, stamp
from psych_store_mysql._pool import Pool
from psych_store_mysql._schema import LATEST_VERSION, VERSION_TABLE, Server, migrate

DEFAULT_LIMITS = StoreLimits(max_append_bytes=6 * 1024 * 1024)
"""What one append may carry unless the store is given other limits: `StoreLimits`' defaults
(4 MiB a record, 1000 records), but 6 MiB in all, so that an append at these limits fits a
``max_allowed_packet`` of 16 MiB (MariaDB's default; MySQL 8's is 64 MiB)."""

_FIRST_POLL = 0.005


def parse_url(url: str) -> Settings:
    """``mysql://user:password@host:port/database`` (or ``mariadb://``) as `Settings`.

    The query string may set ``unix_socket=/path/to/mysqld.sock`` (the host is then
    ignored). User and password are percent-decoded.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("mysql", "mariadb"):
        raise ValueError(
            f"MySQLStore needs a mysql://user:password@host:port/database URL, not "
            f"{parts.scheme}://..."
        )
    database = urllib.parse.unquote(parts.path.lstrip("/"))
    if not database or "/" in database:
        raise ValueError(
            "the MySQLStore URL must name one database: mysql://user@host:3306/DATABASE"
        )
    options = urllib.parse.parse_qs(parts.query)
    unknown = set(options) - {"unix_socket"}
    if unknown:
        raise ValueError(f"unknown option(s) in the MySQLStore URL: {', '.join(sorted(unknown))}")
    return Settings(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=urllib.parse.unquote(parts.username or "root"),
        password=urllib.parse.unquote(parts.password or ""),
        database=database,
        unix_socket=options.get("unix_socket", [None])[0],
    )


class MySQLStore(Store):
    """A `Store` in one MySQL 8 or MariaDB 10.6+ database, shared by any number of processes
    on any number of hosts.

    Every call takes a connection from the store's pool for one transaction; an append is two
    round trips (its writes in one multi-statement text, then ``COMMIT`` once their answers
    were checked), all or nothing whatever happens to the client, and so is a group of
    appends to several runs (`append_many`). Leases are set and compared by the server's clock
    (``UTC_TIMESTAMP(6)``). Deadlocks and lock wait timeouts are retried with backoff; a lost
    connection is retried when nothing was sent or the call is idempotent (appends are, by
    their ``batch_id``), and is `StoreUnavailable` otherwise.

    Call `migrate` once before use (safe in every process at start-up: it holds a named lock),
    and `close` (or use ``async with``) when done. The store does no IO until its first call.

    Args:
        url: ``mysql://user:password@host:port/database``; the database must exist.
        max_connections: the most connections this store opens at once. Every process counts
            against the server's ``max_connections``.
        timeout: seconds one call may take (waiting for a connection included); past it the
            call is `StoreUnavailable`. On MariaDB a session idle inside a transaction a
            second longer than this (its client gone without closing the connection) is
            ended by the server, which rolls it back and frees the rows it locked.
        connect_timeout: seconds to wait for a new connection.
        lock_wait_timeout: ``innodb_lock_wait_timeout`` of the store's sessions, in seconds.
        retry_for: seconds a call keeps retrying what is safe to retry.
        recycle: seconds after which an idle connection is replaced rather than reused.
        poll_max: the longest pause between two polls of `wait` (which starts at 5 ms and
            doubles): how late an idle worker may notice new work, against how often it asks.
        limits: the largest record and batch one append may carry; the server's
            ``max_allowed_packet`` must carry an append at these limits (checked on connect).
        ssl: a TLS context for the connection, when the server is not on this host.
    """

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 10,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        lock_wait_timeout: int = 10,
        retry_for: float = 5.0,
        recycle: float = 1800.0,
        poll_max: float = 0.1,
        limits: StoreLimits = DEFAULT_LIMITS,
        ssl: ssl.SSLContext | None = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        if limits.max_append_bytes < limits.max_record_bytes:
            raise ValueError("limits.max_append_bytes must be at least limits.max_record_bytes")
        parsed = parse_url(url)
        self._settings = Settings(
            host=parsed.host,
            port=parsed.port,
            user=parsed.user,
            password=parsed.password,
            database=parsed.database,
            unix_socket=parsed.unix_socket,
            connect_timeout=connect_timeout,
            lock_wait_timeout=lock_wait_timeout,
            # No call keeps a transaction open longer than `timeout`: a session idle inside
            # one past it belongs to a client that is gone (MariaDB then ends it).
            idle_transaction_timeout=math.ceil(timeout) + 1,
            ssl=ssl,
        )
        if poll_max <= 0:
            raise ValueError(f"poll_max must be positive, not {poll_max}")
        self._polling = Backoff(first=min(_FIRST_POLL, poll_max), longest=poll_max)
        self._limits = limits
        self._specs = SpecTexts()
        self._pool = Pool(
            self._settings,
            size=max_connections,
            recycle=recycle,
            timeout=timeout,
            retry_for=retry_for,
            limits=limits,
        )

    @property
    def database(self) -> str:
        """The database the store keeps its tables in."""
        return self._settings.database

    def __repr__(self) -> str:
        return f"MySQLStore({self._settings!r})"

    async def close(self) -> None:
        """Close the store's connections. Calling it again does nothing."""
        await self._pool.close()

    async def server(self) -> Server:
        """What the server is: its version and ``max_allowed_packet``, checked on connect."""

        pool = self._pool

        async def job(conn: Connection, _: bool) -> Server:
            assert pool.server is not None  # set by the pool's first connection
            return pool.server

        return await pool.run(job, what="connect", resend=True)

    @property
    def open_connections(self) -> int:
        """How many connections the store holds open now (in use or idle)."""
        return self._pool.open_connections

    async def session_settings(self) -> dict[str, str | int]:
        """The settings in force on the store's connections, for operators and tests:
        ``time_zone``, ``isolation``, ``sql_mode``, ``autocommit``,
        ``innodb_lock_wait_timeout`` (seconds) and ``character_set_connection``."""

        pool = self._pool

        async def job(conn: Connection, _: bool) -> dict[str, str | int]:
            assert pool.server is not None  # set by the pool's first connection
            # MySQL 8 calls the isolation variable transaction_isolation; MariaDB before
            # 11.1 only tx_isolation.
            isolation = "tx_isolation" if pool.server.mariadb else "transaction_isolation"
            row = (
                await conn.one(
                    f"SELECT @@time_zone, @@{isolation}, @@sql_mode, @@autocommit, "
                    "@@innodb_lock_wait_timeout, @@character_set_connection"
                )
            ).rows[0]
            names = (
                "time_zone",
                "isolation",
                "sql_mode",
                "autocommit",
                "innodb_lock_wait_timeout",
                "character_set_connection",
            )
            return {
                name: int(value) if isinstance(value, int) else str(value)
                for name, value in zip(names, row, strict=True)
            }

        return await self._pool.run(job, what="read the session settings", resend=True)

    async def migrate(self) -> None:
        """Create or upgrade the schema: numbered steps under a named lock (``GET_LOCK``),
        safe to run at once from several processes."""
        await self._pool.run(
            lambda conn, _: migrate(conn, self._settings), what="migrate", resend=True
        )

    async def schema_version(self) -> SchemaVersion:
        """The last migration the database has, against this package's newest; read-only: a
        database without the version table is at 0 and gets none, and the migration lock
        (``GET_LOCK``) is not taken."""
        applied = await self._pool.run(
            lambda conn, _: _reads.schema_version(conn, VERSION_TABLE),
            what="read the schema version",
            resend=True,
        )
        return SchemaVersion(applied=applied, known=LATEST_VERSION)

    # -- runs and their logs ----------------------------------------------------------------

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """Insert the run row and record 0, then commit; see `Store.create_run`."""
        checked = check_first_record(run, first, self._limits)
        (body,) = checked.texts()
        return await self._pool.run(
            lambda conn, maybe: _runs.create_run(
                conn, run, first, body, checked.problem, maybe_applied=maybe
            ),
            what=f"create run {run.run_id}",
            resend=True,
        )

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """Add a batch (on MariaDB in one statement that commits it when its fence holds,
        else its writes, then their commit); see `Store.append` for the checks and their order.

        A re-sent batch is recognised by its ``batch_id``, so an append whose answer was lost
        is sent again here (a retry is safe) before `StoreUnavailable` is raised.
        """
        if batch.index.due_at is not None:
            stamp(batch.index.due_at, "due_at")
        encoded = _append.encode(run_id, batch, self._limits)
        server = self._pool.server  # None until the first connection: two round trips
        one_trip = server is not None and server.mariadb
        inbox_last = await self._pool.run(
            lambda conn, _: _append.append(
                conn, run_id, attempt, batch, encoded, one_trip=one_trip
            ),
            what=f"append to run {run_id} at seq {batch.records[0].seq if batch.records else '-'}",
            resend=True,
        )
        return AppendResult(inbox_last)

    async def append_many(self, appends: Sequence[Append]) -> list[AppendResult | PsychError]:
        """Append several runs' batches in one transaction of three round trips (group
        commit: their run rows' updates, their records, the ``COMMIT``); see
        `Store.append_many`. A batch the group cannot take or vouch for (refused, carrying
        notices, or in a group that failed) goes through `append` alone, which says why it was
        refused or recognises it as landed.
        """
        check_distinct_runs(appends)
        for one in appends:  # a naive time is the caller's mistake: refused before any write
            if one.batch.index.due_at is not None:
                stamp(one.batch.index.due_at, "due_at")
        if len(appends) < 2:
            return await super().append_many(appends)
        return await _group.append_many(self._pool, self._limits, appends, self.append)

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """The records after `after_seq`, in seq order, at most `limit`."""
        return await self._pool.run(
            lambda conn, _: _reads.read(conn, run_id, after_seq, limit),
            what=f"read run {run_id}",
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
        """Take the oldest claimable run (``SKIP LOCKED``); see `Store.claim`."""
        check_claim(ttl, max_attempts)
        return await self._pool.run(
            lambda conn, _: _leases.claim(conn, worker_id, ttl, run_id, max_attempts),
            what="claim a run" if run_id is None else f"claim run {run_id}",
            resend=False,
        )

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        """Extend the lease of the current attempt; see `Store.renew`."""
        check_ttl(ttl)
        return await self._pool.run(
            lambda conn, _: _leases.renew(conn, run_id, attempt, ttl),
            what=f"renew the lease of run {run_id}",
            resend=True,
        )

    async def release(
        self, run_id: str, attempt: int, runnable_at: dt.datetime | None = None
    ) -> None:
        """Give up the current attempt's lease; see `Store.release`."""
        if runnable_at is not None:
            stamp(runnable_at, "runnable_at")
        await self._pool.run(
            lambda conn, _: _leases.release(conn, run_id, attempt, runnable_at),
            what=f"release run {run_id}",
            resend=False,
        )

    # -- the inbox --------------------------------------------------------------------------

    async def signal(self, tenant: str, run_id: str, signal: Signal, key: str) -> int:
        """Add a signal to the run's inbox, then commit; see `Store.signal`."""
        return await self._pool.run(
            lambda conn, _: _inbox.signal(conn, tenant, run_id, signal, key),
            what=f"signal run {run_id} (key {key!r})",
            resend=False,
        )

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """The run's inbox entries numbered above `after`, in number order."""
        return await self._pool.run(
            lambda conn, _: _inbox.signals(conn, run_id, after),
            what=f"read the inbox of run {run_id}",
            resend=True,
        )

    async def due(self, now: dt.datetime, limit: int = 100) -> list[RunRow]:
        """Waiting runs of every tenant claimable at `now`, oldest first."""
        stamp(now, "now")
        return await self._pool.run(
            lambda conn, _: _inbox.due(conn, now, limit), what="list due runs", resend=True
        )

    # -- listing, specs, deletion -----------------------------------------------------------

    async def get_run(self, tenant: str, run_id: str) -> RunRow | None:
        """The run row, if the run exists in `tenant`."""
        return await self._pool.run(
            lambda conn, _: _reads.get_run(conn, tenant, run_id),
            what=f"read run {run_id}",
            resend=True,
        )

    async def list_runs(self, tenant: str, query: RunQuery) -> Page[RunRow]:
        """The tenant's runs, newest first; see `Store.list_runs`."""
        identifier(tenant, "tenant")
        before = None if query.cursor is None else cursor_position(query.cursor)
        return await self._pool.run(
            lambda conn, _: _reads.list_runs(conn, tenant, query, before),
            what=f"list the runs of tenant {tenant!r}",
            resend=True,
        )

    async def put_spec(self, version: str, spec_json: str) -> None:
        """Keep a spec's JSON under its version; a version stored already is left as it is.

        A version this store has seen stored is not sent again (`SpecTexts`).
        """
        await self._specs.put(
            version,
            lambda: self._pool.run(
                lambda conn, _: _runs.put_spec(conn, version, spec_json),
                what=f"store spec {version}",
                resend=True,
            ),
        )

    async def get_spec(self, version: str) -> str | None:
        """The spec JSON stored under `version`; kept in memory once read (`SpecTexts`), so
        each attempt of a run does not read it again."""
        return await self._specs.get(
            version,
            lambda: self._pool.run(
                lambda conn, _: _reads.get_spec(conn, version),
                what=f"read spec {version}",
                resend=True,
            ),
        )

    async def delete_run(self, tenant: str, run_id: str) -> bool:
        """Delete the run, its records, its inbox and its idempotency key in one transaction."""
        return await self._pool.run(
            lambda conn, _: _runs.delete_run(conn, tenant, run_id),
            what=f"delete run {run_id}",
            resend=False,
        )

    # -- waiting ----------------------------------------------------------------------------

    async def wait(self, run_id: str | None, after_seq: int, timeout: float) -> None:
        """Poll, backing off from 5 ms to `poll_max` (100 ms unless set), until the run's log
        passes `after_seq` (with None: until some run is claimable), or `timeout` seconds
        pass. MySQL has no notifications to wait on."""

        async def ready() -> bool:
            if run_id is None:
                return await self._pool.run(
                    lambda conn, _: _reads.claimable(conn), what="look for work", resend=True
                )
            seq = await self._pool.run(
                lambda conn, _: _reads.next_seq(conn, run_id),
                what=f"wait for run {run_id}",
                resend=True,
            )
            return seq is None or seq - 1 > after_seq

        await poll_until(ready, timeout, self._polling)
