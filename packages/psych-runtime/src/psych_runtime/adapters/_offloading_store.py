"""`OffloadingStore`: any `Store`, with large record bodies kept in a `BlobStore`."""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

from pydantic import TypeAdapter

from psych_core import (
    Body,
    InboxEntry,
    Offloaded,
    PsychError,
    Record,
    RunAdmitted,
    RunNotFound,
    Signal,
    StoreError,
)
from psych_core.ports import (
    Append,
    AppendResult,
    Batch,
    BlobStore,
    Claim,
    NewRun,
    Page,
    RenewResult,
    RunQuery,
    RunRow,
    SchemaVersion,
    Store,
    VersionedSchema,
    check_distinct_runs,
)

DEFAULT_BLOB_THRESHOLD = 64 * 1024
"""Record bodies whose JSON is larger than this many bytes are kept as blobs (64 KiB)."""

_BODY: TypeAdapter[Body] = TypeAdapter(Body)
_ENVELOPE = 4096  # room for a record's run id, seq, time... around its body
_TENANTS_KEPT = 4096


class OffloadingStore(Store):
    """A `Store` that keeps large record bodies in a `BlobStore`, so the log stays small.

    A body whose JSON is larger than `threshold` bytes (a 5 MB tool result, a long model
    message, a large input) is stored once as a content-addressed blob of the run's tenant,
    and the record the inner store keeps holds an `Offloaded` reference (a few hundred bytes).
    Every read through this store puts the body back, so status, reports, streams, the worker
    and the model see the whole content; nothing else in Psych knows blobs exist.

    Wrap the store once and use the wrapper everywhere: for `dispatch` (scoped), the `Worker`,
    and `status`, `report`, `read_log`, `stream`. A process that reads through the bare store
    gets `FoldError` naming the blob. Blobs are written before the append that refers to them,
    so a record never names a blob that is not there; a crash in between leaves a blob no
    record names, which is harmless. A re-sent batch refers to the same blobs (equal content,
    equal reference), so re-sending stays idempotent. Deleting a run leaves its blobs: blobs
    are shared by equal content within a tenant.

    Args:
        store: the store underneath.
        blobs: where large bodies go; every process must reach the same blobs.
        threshold: the largest body, in bytes of JSON, kept in the log itself. Bodies that
            would not fit the inner store's `max_record_bytes` are kept as blobs whatever it is.
    """

    def __init__(
        self, store: Store, blobs: BlobStore, *, threshold: int = DEFAULT_BLOB_THRESHOLD
    ) -> None:
        if threshold < 0:
            raise ValueError(f"threshold must be >= 0 bytes, got {threshold}")
        self.store = store
        self.blobs = blobs
        self.threshold = threshold
        # The inner store's limits: offloaded records are far below them.
        self._limits = store.limits
        self._cutoff = max(0, min(threshold, self._limits.max_record_bytes - _ENVELOPE))
        self._tenants: OrderedDict[str, str] = OrderedDict()

    async def migrate(self) -> None:
        """Migrate the inner store."""
        await self.store.migrate()

    async def schema_version(self) -> SchemaVersion:
        """The inner store's schema version (see `VersionedSchema`): blobs have no schema.

        Raises:
            TypeError: the inner store does not report one (a `MemoryStore`, for one);
                `psych_runtime.ports.schema_version` answers None for it instead.
        """
        if not isinstance(self.store, VersionedSchema):
            raise TypeError(
                f"{self.store!r} does not report a schema version; ask "
                "psych_runtime.ports.schema_version(store), which answers None for it"
            )
        return await self.store.schema_version()

    async def close(self) -> None:
        """Close the inner store: the wrapper stands for it everywhere. The blob store is
        the caller's to close."""
        await self.store.close()

    async def create_run(self, run: NewRun, first: Record) -> tuple[str, bool]:
        """See `Store.create_run`; a large input is kept as a blob."""
        self._remember(run.run_id, run.tenant)
        return await self.store.create_run(run, await self._offload(run.tenant, first))

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        """See `Store.append`; large bodies are put in the blob store first."""
        return await self.store.append(run_id, attempt, await self._offloaded(run_id, batch))

    async def append_many(self, appends: Sequence[Append]) -> list[AppendResult | PsychError]:
        """See `Store.append_many`; large bodies are put in the blob store first, and the
        inner store commits the group as it commits one (together, where it can)."""
        check_distinct_runs(appends)
        ready: list[Append | PsychError] = []
        for one in appends:
            try:
                batch = await self._offloaded(one.run_id, one.batch)
            except PsychError as refused:
                ready.append(refused)
            else:
                ready.append(replace(one, batch=batch))
        sent = [one for one in ready if isinstance(one, Append)]
        answers = iter(await self.store.append_many(sent) if sent else [])
        return [one if isinstance(one, PsychError) else next(answers) for one in ready]

    async def _offloaded(self, run_id: str, batch: Batch) -> Batch:
        """`batch` with each large body kept as a blob and referenced."""
        records: list[Record] = []
        tenant: str | None = None
        for record in batch.records:
            data = self._oversized(record)
            if data is None:
                records.append(record)
                continue
            tenant = tenant or await self._tenant(run_id)
            records.append(await self._keep(tenant, record, data))
        if tenant is not None:
            return replace(batch, records=tuple(records))
        return batch

    async def read(
        self, run_id: str, after_seq: int = -1, limit: int | None = None
    ) -> list[Record]:
        """See `Store.read`; bodies kept as blobs come back whole."""
        records = await self.store.read(run_id, after_seq, limit)
        return [await self._restore(record) for record in records]

    async def claim(
        self,
        worker_id: str,
        ttl: dt.timedelta,
        *,
        run_id: str | None = None,
        max_attempts: int = 10,
    ) -> Claim | None:
        """See `Store.claim`; the log a claim brings (`Claim.log`) comes back whole, as
        `read`'s does."""
        claim = await self.store.claim(worker_id, ttl, run_id=run_id, max_attempts=max_attempts)
        if claim is None:
            return None
        self._remember(claim.run_id, claim.tenant)
        if claim.log is None:
            return claim
        return replace(claim, log=tuple([await self._restore(record) for record in claim.log]))

    async def renew(self, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
        """See `Store.renew`."""
        return await self.store.renew(run_id, attempt, ttl)

    async def release(
        self, run_id: str, attempt: int, runnable_at: dt.datetime | None = None
    ) -> None:
        """See `Store.release`."""
        await self.store.release(run_id, attempt, runnable_at)

    async def signal(self, tenant: str, run_id: str, signal: Signal, key: str) -> int:
        """See `Store.signal`."""
        return await self.store.signal(tenant, run_id, signal, key)

    async def signals(self, run_id: str, after: int = 0) -> list[InboxEntry]:
        """See `Store.signals`."""
        return await self.store.signals(run_id, after)

    async def due(self, now: dt.datetime, limit: int = 100) -> list[RunRow]:
        """See `Store.due`."""
        return await self.store.due(now, limit)

    async def get_run(self, tenant: str, run_id: str) -> RunRow | None:
        """See `Store.get_run`."""
        return await self.store.get_run(tenant, run_id)

    async def list_runs(self, tenant: str, query: RunQuery) -> Page[RunRow]:
        """See `Store.list_runs`."""
        return await self.store.list_runs(tenant, query)

    async def put_spec(self, version: str, spec_json: str) -> None:
        """See `Store.put_spec`."""
        await self.store.put_spec(version, spec_json)

    async def get_spec(self, version: str) -> str | None:
        """See `Store.get_spec`."""
        return await self.store.get_spec(version)

    async def delete_run(self, tenant: str, run_id: str) -> bool:
        """See `Store.delete_run`; the run's blobs stay (equal content is shared)."""
        self._tenants.pop(run_id, None)
        return await self.store.delete_run(tenant, run_id)

    async def wait(self, run_id: str | None, after_seq: int, timeout: float) -> None:
        """See `Store.wait`."""
        await self.store.wait(run_id, after_seq, timeout)

    # -- blobs ------------------------------------------------------------------------------

    def _oversized(self, record: Record) -> bytes | None:
        """The body's JSON when it is too large for the log, else None."""
        data = record.body.model_dump_json().encode()
        return data if len(data) > self._cutoff else None

    async def _offload(self, tenant: str, record: Record) -> Record:
        data = self._oversized(record)
        return record if data is None else await self._keep(tenant, record, data)

    async def _keep(self, tenant: str, record: Record, data: bytes) -> Record:
        ref = await self.blobs.put(tenant, data)
        body = Offloaded(body_type=record.body.type, tenant=tenant, blob=ref, size=len(data))
        return record.model_copy(update={"body": body})

    async def _restore(self, record: Record) -> Record:
        held = record.body
        if not isinstance(held, Offloaded):
            return record
        body = _BODY.validate_json(await self.blobs.get(held.tenant, held.blob))
        if body.type != held.body_type:
            raise StoreError(
                f"run {record.run_id}, seq {record.seq}: blob {held.blob} holds a {body.type} "
                f"record, not the {held.body_type} the log names"
            )
        return record.model_copy(update={"body": body})

    async def _tenant(self, run_id: str) -> str:
        tenant = self._tenants.get(run_id)
        if tenant is not None:
            self._tenants.move_to_end(run_id)
            return tenant
        first = await self.store.read(run_id, -1, 1)
        if not first:
            raise RunNotFound(run_id)
        body = first[0].body
        if isinstance(body, RunAdmitted):
            tenant = body.scope.tenant
        elif isinstance(body, Offloaded):
            tenant = body.tenant
        else:
            raise StoreError(f"run {run_id}: its log does not start with run_admitted")
        self._remember(run_id, tenant)
        return tenant

    def _remember(self, run_id: str, tenant: str) -> None:
        self._tenants[run_id] = tenant
        self._tenants.move_to_end(run_id)
        while len(self._tenants) > _TENANTS_KEPT:
            self._tenants.popitem(last=False)

    def __repr__(self) -> str:
        return f"OffloadingStore({self.store!r}, {self.blobs!r}, threshold={self.threshold})"
