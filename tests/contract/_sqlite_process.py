"""A process that shares one SQLite file with others: started by test_sqlite_store.py.

    python _sqlite_process.py DB GO_FILE migrate
    python _sqlite_process.py DB GO_FILE work WORKER   claim runs until none is left
    python _sqlite_process.py DB GO_FILE poll WORKER   claim runs as they become claimable,
                                                       until the time written in GO_FILE
    python _sqlite_process.py DB GO_FILE signal NAME RUN_ID   send signals to one run: keys
                                                       shared by every process, and its own

Every process prints ``ready`` once it has started, then waits for GO_FILE to exist, so they
all start at once. Then it prints one line per run it won (``won RUN_ID``), after finishing it
with two appends; in ``signal`` mode, one line per signal it got in (``won KEY=NUMBER``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
import time
from pathlib import Path

from psych_core import (
    Batch,
    DuplicateSignal,
    Record,
    RunIndex,
    RunStatusName,
    ToolCallFinished,
    UserInput,
)
from psych_store_sqlite import SQLiteStore

LEASE = dt.timedelta(seconds=60)


def wait_for(go: Path) -> str:
    """Block until GO_FILE exists; return what it says."""
    deadline = time.monotonic() + 30
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{go} never appeared")
        time.sleep(0.001)
    return go.read_text()


async def finish(store: SQLiteStore, run_id: str, attempt: int, seq: int) -> None:
    """Two appends, the second ending the run: what a worker's attempt does, in small."""
    steps: tuple[tuple[int, RunStatusName], ...] = ((0, "running"), (1, "completed"))
    for step, status in steps:
        at = dt.datetime.now(dt.UTC)
        record = Record(
            run_id=run_id,
            seq=seq + step,
            attempt=attempt,
            at=at,
            body=ToolCallFinished(call_id=f"{seq}.0", result=f"by attempt {attempt}"),
        )
        batch = Batch((record,), f"{attempt}.{seq + step}", RunIndex(status=status))
        await store.append(run_id, attempt, batch)


SIGNALS = 20
"""Signals per process with a shared key, and as many with its own."""


async def send_signals(store: SQLiteStore, name: str, run_id: str) -> None:
    """Race the other processes for the shared keys; send its own keys too."""
    for i in range(SIGNALS):
        for key in (f"shared-{i}", f"{name}-{i}"):
            try:
                number = await store.signal("t", run_id, UserInput(text=key), key)
            except DuplicateSignal:
                continue
            print(f"won {key}={number}", flush=True)


async def main(db: str, go: Path, mode: str, args: list[str]) -> None:
    async with SQLiteStore(db, busy_timeout=30) as store:
        print("ready", flush=True)
        until = float(wait_for(go))
        if mode == "migrate":
            await store.migrate()
            return
        worker = args[0]
        if mode == "work":
            while (claim := await store.claim(worker, LEASE)) is not None:
                await finish(store, claim.run_id, claim.attempt, claim.record.seq + 1)
                print("won", claim.run_id, flush=True)
        elif mode == "poll":
            while time.time() < until:
                claim = await store.claim(worker, LEASE)
                if claim is None:
                    await asyncio.sleep(0.001)
                    continue
                await finish(store, claim.run_id, claim.attempt, claim.record.seq + 1)
                print("won", claim.run_id, flush=True)
        elif mode == "signal":
            await send_signals(store, worker, args[1])
        else:
            raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:]))
