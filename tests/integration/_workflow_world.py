"""A store of each kind the workflow end-to-end tests run on, with its clock, and the loop that
works a run to its end through real `Worker`s: `MemoryStore` on a clock the test moves (a sleep
of an hour passes at once), `SQLiteStore` on the host's clock (the waits are short)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psych_runtime import (
    Leases,
    MemoryStore,
    RunStatus,
    Runtime,
    Scope,
    ScopedStore,
    SystemClock,
    Worker,
    WorkflowSpec,
    dispatch,
    read_log,
    status,
)
from psych_runtime.ports import ModelClient, Store
from psych_runtime.records import Body, Record
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.tools import ToolFunction

KINDS = ("memory", "sqlite")
SCOPE = Scope(tenant="acme")
TTL = dt.timedelta(seconds=2)


class MovableClock:
    """A clock the test moves; the memory store and the runtime read the same one."""

    def __init__(self) -> None:
        self.at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def now(self) -> dt.datetime:
        return self.at


@dataclass
class World:
    """One store and the clock its runs live by."""

    kind: str
    store: Store
    clock: MovableClock | SystemClock
    ttl: dt.timedelta = TTL
    scoped: ScopedStore = field(init=False)

    def __post_init__(self) -> None:
        self.scoped = self.store.scoped(SCOPE)

    def runtime(
        self,
        tools: Sequence[ToolFunction] = (),
        model: ModelClient | None = None,
        **options: Any,
    ) -> Runtime:
        return Runtime(
            model=model or FakeModel(),
            tools=tools,
            clock=self.clock,
            leases=Leases(ttl=self.ttl),
            **options,
        )

    async def dispatch(self, spec: WorkflowSpec, input: Any = None) -> str:
        return await dispatch(self.scoped, spec, json.dumps(input), clock=self.clock)

    async def work(self, runtime: Runtime) -> None:
        """Run every runnable run until none is."""
        await Worker(self.store, runtime, concurrency=4, poll_interval=0.02).run_until_idle()

    async def finish(self, run_id: str, runtime: Runtime, *, rounds: int = 40) -> RunStatus:
        """Work the run until it ends or waits for something only the test can send: when it
        waits for a time, the time is let pass."""
        for _ in range(rounds):
            await self.work(runtime)
            now = await status(self.scoped, run_id)
            if now.status in ("completed", "failed", "cancelled"):
                return now
            if now.status != "waiting":
                continue
            if now.due_at is None:
                return now
            await self.pass_until(now.due_at)
        raise AssertionError(f"run {run_id} did not settle: {now}")

    async def pass_until(self, when: dt.datetime) -> None:
        if isinstance(self.clock, MovableClock):
            self.clock.at = max(self.clock.at, when) + dt.timedelta(milliseconds=1)
            return
        wait = (when - dt.datetime.now(dt.UTC)).total_seconds()
        await asyncio.sleep(max(wait, 0) + 0.02)

    async def pass_lease(self) -> None:
        """Let the lease of an attempt that died expire."""
        if isinstance(self.clock, MovableClock):
            self.clock.at += self.ttl + dt.timedelta(seconds=1)
            return
        await asyncio.sleep(self.ttl.total_seconds() + 0.1)

    async def log(self, run_id: str) -> list[Record]:
        return await read_log(self.scoped, run_id)

    async def bodies(self, run_id: str, kind: type[Body]) -> list[Any]:
        return [r.body for r in await self.log(run_id) if isinstance(r.body, kind)]


@asynccontextmanager
async def world_of(kind: str, folder: Path, *, ttl: dt.timedelta = TTL) -> AsyncIterator[World]:
    """A fresh store of `kind`; on the host's clock, attempts hold leases of `ttl` (a crash
    test waits that long for each take-over)."""
    if kind == "memory":
        clock = MovableClock()
        yield World(kind, MemoryStore(clock=clock.now), clock)
        return
    from psych_store_sqlite import SQLiteStore

    store = SQLiteStore(folder / "workflows.db")
    await store.migrate()
    try:
        yield World(kind, store, SystemClock(), ttl=ttl)
    finally:
        await store.close()
