"""`DynamoDBStore`: runs, logs, inboxes and leases in one DynamoDB table."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from aiobotocore.config import AioConfig

from psych_adapter_kit import Backoff, SpecTexts
from psych_core import (
    Append,
    AppendResult,
    Batch,
    Claim,
    InboxEntry,
    NewRun,
    Page,
    PsychError,
    Record,
    RenewResult,
    RunQuery,
    RunRow,
    SchemaVersion,
    Signal,
    Store,
    StoreLimits,
)
from psych_core.ports import check_distinct_runs
from psych_store_dynamodb import _append, _claims, _group, _inbox, _log, _runs, _schema
from psych_store_dynamodb._client import Connection
from psych_store_dynamodb._limits import DEFAULT_LIMITS, check_limits
from psych_store_dynamodb._table import Table

_default_session: Any = None


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _shared_session() -> Any:
    """One aioboto3 session for every store made without one: botocore loads DynamoDB's
    service description once per session, which takes longer than most calls."""
    global _default_session
    if _default_session is None:
        import aioboto3  # type: ignore[import-untyped]  # aioboto3 ships no type information

        _default_session = aioboto3.Session()
    return _default_session


class DynamoDBStore(Store):
    """A `Store` in one DynamoDB table, shared by handlers and workers on any number of hosts.

    One table holds everything (the package README draws the design): each run's row,
    records, inbox entries and signal keys in the run's partition; specs and idempotency keys
    in partitions of their own; four sparse global secondary indexes for claims, `due`, and
    listings. An append is one ``TransactWriteItems`` whose condition on the run row is the
    fence (the attempt, the lease, the next seq and, when it suspends or ends the run, the
    inbox count); several runs' appends given to `append_many` share one transaction (group
    commit), each fenced as if alone. Reads of logs and rows are consistent reads.

    DynamoDB has no clock of its own: leases are set and compared on the caller's clock (the
    `clock` argument). Safety does not depend on it: an attempt whose lease another worker
    took, however sure its own clock is, is refused by the fence. Skew between hosts only
    moves when a lease is considered expired; the README says how much is tolerated.

    Call `migrate` once per process at start-up (it creates the table and its indexes, or
    checks them), and `close` (or use ``async with``) when done. A store belongs to the event
    loop it is first used in.

    Args:
        table: the table's name.
        region_name: the AWS region; by default the session's (``AWS_REGION``, profile).
        endpoint_url: another endpoint than AWS's, such as a local DynamoDB or moto.
        session: an ``aioboto3.Session`` with the credentials to use; by default the
            standard chain (environment, profile, instance or task role).
        claim_shards: how many partitions the claim and due indexes spread runs over, so no
            single index partition takes every claim's writes. Fixed when the table is
            created: every process must use the table's number.
        limits: the largest record and batch one append may carry (at most what one
            DynamoDB item and transaction hold).
        clock: the current UTC time; leases and record times come from it.
        retries: how often botocore retries a throttled or failed request, with backoff,
            before the call raises `StoreUnavailable`.
        connect_timeout: seconds to connect before a request fails.
        read_timeout: seconds to wait for an answer before a request fails.
        max_connections: the size of the HTTP connection pool.
        poll_ceiling: the longest pause between two polls of `wait`.
        migrate_timeout: seconds `migrate` waits for the table and its indexes to become
            active.
    """

    def __init__(
        self,
        table: str,
        *,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        session: Any = None,
        claim_shards: int = 4,
        limits: StoreLimits = DEFAULT_LIMITS,
        clock: Callable[[], dt.datetime] | None = None,
        retries: int = 6,
        connect_timeout: float = 5.0,
        read_timeout: float = 20.0,
        max_connections: int = 50,
        poll_ceiling: float = 0.5,
        migrate_timeout: float = 600.0,
    ) -> None:
        if not table:
            raise ValueError("table must name a DynamoDB table")
        if not 1 <= claim_shards <= 64:
            raise ValueError(f"claim_shards must be 1 to 64, not {claim_shards}")
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, not {retries}")
        if poll_ceiling <= 0:
            raise ValueError(f"poll_ceiling must be positive, not {poll_ceiling}")
        config = AioConfig(
            retries={"mode": "standard", "total_max_attempts": retries + 1},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=max_connections,
        )
        options: dict[str, Any] = {"config": config}
        if region_name is not None:
            options["region_name"] = region_name
        if endpoint_url is not None:
            options["endpoint_url"] = endpoint_url
        self._conn = Connection(table, session or _shared_session(), options)
        self._limits = check_limits(limits)
        self._table = Table(
            self._conn, limits=self._limits, clock=clock or _utc_now, claim_shards=claim_shards
        )
        self._polling = Backoff(first=min(0.01, poll_ceiling), longest=poll_ceiling)
        self._specs = SpecTexts()
        self._migrate_timeout = migrate_timeout

    @property
    def table(self) -> str:
        """The table's name."""
        return self._conn.table

    def __repr__(self) -> str:
        return f"DynamoDBStore({self._conn.where})"

    async def close(self) -> None:
        """Close the HTTP connections. Calling it again does nothing."""
        await self._conn.close()

    async def migrate(self) -> None:
        """Create the table and its indexes, or check that they have the right shape, and
        apply the numbered schema steps not yet recorded. Idempotent; safe to run at once
        from several processes (they wait for the table to be active)."""
        await _schema.migrate(
            self._conn, self._table.shards, self._table.clock, self._migrate_timeout
        )

    async def schema_version(self) -> SchemaVersion:
        """The schema version the table records, against this package's newest; read-only
        (one consistent read of the schema item): a table that does not exist is at 0 and is
        not created."""
        applied = await _schema.stored_version(self._conn)
        return SchemaVersion(applied=applied, known=_schema.LATEST_VERSION)

    # -- runs and their logs ----------------------------------------------------------------

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """Insert the run row and record 0 in one transaction; see `Store.create_run`."""
        return await _log.create_run(self._table, run, first)

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """Add a batch in one transaction; see `Store.append` for the checks and their order."""
        return await _append.append(self._table, run_id, attempt, batch)

    async def append_many(self, appends: Sequence[Append]) -> list[AppendResult | PsychError]:
        """Append several runs' batches in one ``TransactWriteItems`` (group commit); see
        `Store.append_many` and the module `_group`.

        The batches this process can write at once (records, nothing wrong with them, a run
        it knows, no notices) go in one transaction per 100 items and 4 MB; the rest, and
        those a transaction refused or could not vouch for, go through `append` one each (at
        the same time), so every refusal is the one `append` gives. A naive ``due_at`` is a
        ValueError before anything is written.
        """
        check_distinct_runs(appends)
        return await _group.append_many(self._table, appends)

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """The records after `after_seq`, in seq order, at most `limit` (consistent reads)."""
        return await _log.read(self._table, run_id, after_seq, limit)

    # -- leases -----------------------------------------------------------------------------

    async def claim(
        self,
        worker_id: str,
        ttl: dt.timedelta,
        *,
        run_id: str | None = None,
        max_attempts: int = 10,
    ) -> Claim | None:
        """Take the oldest claimable run; see `Store.claim` and the module `_claims`."""
        return await _claims.claim(self._table, worker_id, ttl, run_id, max_attempts)

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        """Extend the lease of the current attempt; see `Store.renew`."""
        return await _claims.renew(self._table, run_id, attempt, ttl)

    async def release(
        self, run_id: str, attempt: int, runnable_at: dt.datetime | None = None
    ) -> None:
        """Give up the current attempt's lease; see `Store.release`."""
        await _claims.release(self._table, run_id, attempt, runnable_at)

    # -- the inbox --------------------------------------------------------------------------

    async def signal(self, tenant: str, run_id: str, signal: Signal, key: str) -> int:
        """Add a signal to the run's inbox in one transaction; see `Store.signal`."""
        return await _inbox.signal(self._table, tenant, run_id, signal, key)

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """The run's inbox entries numbered above `after` (a consistent read)."""
        return await _inbox.signals(self._table, run_id, after)

    async def due(self, now: dt.datetime, limit: int = 100) -> list[RunRow]:
        """Waiting runs of every tenant claimable at `now`, oldest first; see `Store.due`."""
        return await _inbox.due(self._table, now, limit)

    # -- listing, specs, deletion, waiting --------------------------------------------------

    async def get_run(self, tenant: str, run_id: str) -> RunRow | None:
        """The run row (a consistent read), if the run exists in `tenant`."""
        return await _runs.get_run(self._table, tenant, run_id)

    async def list_runs(self, tenant: str, query: RunQuery) -> Page[RunRow]:
        """The tenant's runs, newest first; see `Store.list_runs`."""
        return await _runs.list_runs(self._table, tenant, query)

    async def put_spec(self, version: str, spec_json: str) -> None:
        """Keep a spec's JSON under its version; a version stored already is left as it is.

        A version this store has seen stored is not sent again (`SpecTexts`).
        """
        await self._specs.put(version, lambda: _runs.put_spec(self._table, version, spec_json))

    async def get_spec(self, version: str) -> str | None:
        """The spec JSON stored under `version`; kept in memory once read (`SpecTexts`), so
        each attempt of a run does not read it again."""
        return await self._specs.get(version, lambda: _runs.get_spec(self._table, version))

    async def delete_run(self, tenant: str, run_id: str) -> bool:
        """Delete the run, its records, its inbox and its idempotency key."""
        return await _runs.delete_run(self._table, tenant, run_id)

    async def wait(self, run_id: str | None, after_seq: int, timeout: float) -> None:
        """Poll with backoff until the run's log passes `after_seq` (with None: until some
        run is claimable), or `timeout` seconds pass."""
        await _runs.wait(self._table, run_id, after_seq, timeout, self._polling)
