"""What every part of the store contract suite shares: the hooks, the fixture, the builders.

Records built here are well-formed but the store never interprets them: any body will do, so
the suite uses `ToolCallFinished` with a payload it can size to the byte.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import ClassVar

import pytest
import pytest_asyncio

from psych_core import (
    Batch,
    Claim,
    NewRun,
    Notify,
    Record,
    RunAdmitted,
    RunIndex,
    RunRow,
    Scope,
    Store,
    ToolCallFinished,
)

TENANT = "tenant-a"
OTHER_TENANT = "tenant-b"
RUNNING = RunIndex(status="running")
LEASE = dt.timedelta(seconds=60)
"""A lease that outlives any test: it expires only when a test says so."""

SHORT_LEASE = dt.timedelta(seconds=0.3)
"""A lease a test waits out; `AFTER_SHORT_LEASE` seconds later it has surely expired."""

AFTER_SHORT_LEASE = 0.6


def utc_now() -> dt.datetime:
    """This host's clock, in UTC."""
    return dt.datetime.now(dt.UTC)


def new_id(prefix: str = "run") -> str:
    """A fresh id, unique across tests and processes."""
    return f"{prefix}-{uuid.uuid4().hex}"


def admission(
    run_id: str | None = None,
    *,
    tenant: str = TENANT,
    key: str | None = None,
    request: str = "request-1",
    parent: str | None = None,
    agent: str = "agent",
    input: str = "hello",
) -> tuple[NewRun, Record]:
    """A `NewRun` and its record 0, as `dispatch` would make them."""
    run_id = run_id or new_id()
    run = NewRun(
        run_id=run_id,
        tenant=tenant,
        agent=agent,
        spec_version="sha256:spec",
        idempotency_key=key,
        request_hash=None if key is None else f"hash:{request}",
        parent_run_id=parent,
    )
    first = Record(
        run_id=run_id,
        seq=0,
        attempt=0,
        at=utc_now(),
        body=RunAdmitted(
            agent=agent,
            spec_version="sha256:spec",
            input=input,
            scope=Scope(tenant=tenant),
            parent_run_id=parent,
        ),
    )
    return run, first


def entry(run_id: str, seq: int, attempt: int, payload: str = "x") -> Record:
    """A record the store keeps as it is; `payload` sets its size."""
    return Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=utc_now(),
        body=ToolCallFinished(call_id=f"{seq}.0", result=payload),
    )


def sized_entry(run_id: str, seq: int, attempt: int, size: int, fill: str = "a") -> Record:
    """A record whose JSON is exactly `size` UTF-8 bytes (`fill` is one or two bytes)."""
    base = len(entry(run_id, seq, attempt, "").model_dump_json().encode())
    room = size - base
    width = len(fill.encode())
    if room < 0:
        raise ValueError(f"a record cannot be as small as {size} bytes (the smallest is {base})")
    payload = fill * (room // width) + "a" * (room % width)
    record = entry(run_id, seq, attempt, payload)
    assert len(record.model_dump_json().encode()) == size
    return record


def size_of(record: Record) -> int:
    """The UTF-8 bytes of the record's JSON: what store limits count."""
    return len(record.model_dump_json().encode())


def batch_of(
    records: Sequence[Record],
    *,
    batch_id: str | None = None,
    index: RunIndex = RUNNING,
    inbox_seen: int = 0,
    notify: Sequence[Notify] = (),
) -> Batch:
    """A batch of `records` with a fresh id unless one is given."""
    return Batch(
        records=tuple(records),
        batch_id=batch_id or new_id("batch"),
        index=index,
        inbox_seen=inbox_seen,
        notify=tuple(notify),
    )


class StoreHarness:
    """The hooks an adapter fills in, and the `store` fixture built from them."""

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.asyncio]

    async def create_store(self) -> Store:
        """Return a fresh, migrated store that no other test uses (or sees into).

        Override this: it is the one method an adapter must provide.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must override `async def create_store(self) -> Store`"
        )

    async def close_store(self, store: Store) -> None:
        """Release what `create_store` acquired (connections, threads). Default: nothing."""

    @pytest_asyncio.fixture
    async def store(self) -> AsyncIterator[Store]:
        """A fresh store from `create_store`, closed with `close_store` after the test."""
        store = await self.create_store()
        try:
            yield store
        finally:
            await self.close_store(store)

    # -- steps most tests take --------------------------------------------------------------

    @staticmethod
    async def admit(
        store: Store,
        *,
        tenant: str = TENANT,
        key: str | None = None,
        parent: str | None = None,
        input: str = "hello",
    ) -> str:
        """Create a run (see `admission`) and return its id."""
        run, first = admission(tenant=tenant, key=key, parent=parent, input=input)
        run_id, created = await store.create_run(run, first)
        assert created, f"run {run.run_id} was not created"
        return run_id

    @staticmethod
    async def admit_and_claim(
        store: Store,
        *,
        tenant: str = TENANT,
        worker: str = "worker-1",
        ttl: dt.timedelta = LEASE,
    ) -> Claim:
        """Create a run and claim it: the run is leased by attempt 1."""
        run, first = admission(tenant=tenant)
        await store.create_run(run, first)
        claim = await store.claim(worker, ttl, run_id=run.run_id)
        assert claim is not None, f"run {run.run_id} was created but could not be claimed"
        return claim

    @staticmethod
    async def row(store: Store, run_id: str, tenant: str = TENANT) -> RunRow:
        """The run row, which must exist."""
        row = await store.get_run(tenant, run_id)
        assert row is not None, f"run {run_id} has no row in tenant {tenant}"
        return row

    @classmethod
    async def append_entries(
        cls,
        store: Store,
        claim: Claim,
        count: int = 1,
        *,
        index: RunIndex = RUNNING,
        payload: str = "x",
    ) -> Batch:
        """Append `count` records at the run's next seq from the claim's attempt."""
        start = (await cls.row(store, claim.run_id, claim.tenant)).next_seq
        records = [
            entry(claim.run_id, seq, claim.attempt, payload) for seq in range(start, start + count)
        ]
        batch = batch_of(records, index=index)
        await store.append(claim.run_id, claim.attempt, batch)
        return batch
