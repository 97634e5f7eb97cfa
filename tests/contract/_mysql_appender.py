"""Client processes that claim and append to MySQL runs until they are killed: started by
test_mysql_atomicity.py.

    python _mysql_appender.py

This process imports everything once, then forks one appender per command on its standard
input, so that a test can start and kill hundreds of them in seconds:

- ``spawn RUN NEIGHBOUR URL SEED``: fork a process that claims RUN through URL, then appends
  batches of one to three records to it, some with a notice for NEIGHBOUR's inbox, and now and
  then releases and claims again, until it is killed. Answers ``pid RUN PID``.
- ``reap PID``: wait for that process to end (the test kills it), so that its id is not
  reused before the test knows it is gone. Answers ``dead PID``.

Each appender reports on the same standard output, one line per write (lines are single
``write`` calls below the pipe's atomic size, so processes never interleave inside a line):

- ``claimed RUN ATTEMPT SEQ``: a claim returned (its `AttemptStarted` is at SEQ);
- ``acked RUN BATCH FIRST COUNT``: an append returned, so its records must be in the log;
- ``error RUN MESSAGE``: a call failed in a way no interruption excuses.

A record's ``call_id`` is ``BATCH/I`` and its ``result`` ``I+1/COUNT``, with ``+notice`` when
the batch carries a notice (keyed BATCH): enough for the test to check, from the log alone,
that every batch is whole and that its notice was written with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import random
import sys

from psych_core import (
    Batch,
    LeaseLost,
    Notify,
    Record,
    RunIndex,
    StoreUnavailable,
    ToolCallFinished,
    UserInput,
)
from psych_store_mysql import MySQLStore

LEASE = dt.timedelta(milliseconds=50)  # short: the next process waits this long to claim
NO_LIMIT = 1_000_000_000  # claims per run: these runs are claimed hundreds of times


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


async def claim(store: MySQLStore, run_id: str, worker: str) -> tuple[int, int]:
    """Claim the run (its last lease, of a process killed, expires within LEASE)."""
    while True:
        try:
            taken = await store.claim(worker, LEASE, run_id=run_id, max_attempts=NO_LIMIT)
        except StoreUnavailable:
            taken = None  # the claim may have been applied: its lease expires like any other
        if taken is not None:
            say(f"claimed {run_id} {taken.attempt} {taken.record.seq}")
            return taken.attempt, taken.record.seq + 1
        await asyncio.sleep(0.005)


async def append(store: MySQLStore, run_id: str, attempt: int, batch: Batch) -> None:
    """Append until it is applied: an append is idempotent by its batch id."""
    while True:
        try:
            await store.append(run_id, attempt, batch)
            return
        except StoreUnavailable:
            await asyncio.sleep(0.005)


async def work(url: str, run_id: str, neighbour: str, seed: int) -> None:
    rng = random.Random(seed)
    worker = f"appender-{os.getpid()}"
    async with MySQLStore(url, retry_for=2.0, timeout=5.0) as store:
        attempt, seq = await claim(store, run_id, worker)
        while True:
            if rng.random() < 0.1:
                with contextlib.suppress(StoreUnavailable):  # released or not: it expires
                    await store.release(run_id, attempt)
                attempt, seq = await claim(store, run_id, worker)
            count = rng.randint(1, 3)
            notice = rng.random() < 0.3
            batch_id = f"{run_id}.{attempt}.{seq}"
            mark = "+notice" if notice else ""
            records = tuple(
                Record(
                    run_id=run_id,
                    seq=seq + i,
                    attempt=attempt,
                    at=dt.datetime.now(dt.UTC),
                    body=ToolCallFinished(
                        call_id=f"{batch_id}/{i}", result=f"{i + 1}/{count}{mark}"
                    ),
                )
                for i in range(count)
            )
            notify = (Notify(neighbour, batch_id, UserInput(text=batch_id)),) if notice else ()
            batch = Batch(records, batch_id, RunIndex(status="running"), notify=notify)
            try:
                await append(store, run_id, attempt, batch)
            except LeaseLost as exc:  # never expected: only this process claims the run
                say(f"error {run_id} {exc!r}")
                attempt, seq = await claim(store, run_id, worker)
                continue
            say(f"acked {run_id} {batch_id} {seq} {count}")
            seq += count


def spawn(run_id: str, neighbour: str, url: str, seed: int) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:  # the appender: never returns
        os.close(0)
        asyncio.run(work(url, run_id, neighbour, seed))
    except BaseException as exc:
        say(f"error {run_id} {exc!r}")
    finally:
        os._exit(1)


def main() -> None:
    while line := sys.stdin.readline():
        command, *args = line.split()
        if command == "spawn":
            run_id, neighbour, url, seed = args
            say(f"pid {run_id} {spawn(run_id, neighbour, url, int(seed))}")
        elif command == "reap":
            os.waitpid(int(args[0]), 0)
            say(f"dead {args[0]}")


if __name__ == "__main__":
    main()
