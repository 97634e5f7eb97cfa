"""Recovery behind a queue: how long a run whose worker died waits before it runs again.

One run is admitted and a worker process (`bench._worker_process` in ``stall`` mode, with a
short lease) starts it and is killed (SIGKILL) in the middle of it. Then a queue of runs is
admitted behind it, and a fresh worker process serves the store. The figure is the time from
the killed run's lease expiry to its next `AttemptStarted`. A claim takes the run claimable the
longest (``runnable_at``, then admission order); a leased run's ``runnable_at`` is its lease's
expiry, so the killed run comes after every run admitted before its lease expired (on the
SQLite and PostgreSQL stores, after every run admitted at all: a run is admitted claimable
since the start of time). How many of the queue started first is measured too.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench._agent import SCOPE, bench_spec
from bench._stores import fresh_store
from psych_runtime import dispatch
from psych_runtime.ports import Store
from psych_runtime.records import AttemptStarted, Record

ROOT = Path(__file__).resolve().parents[1]
RECOVERY_POLL_S = 0.05
"""The fresh worker's longest wait between claims when it finds nothing to claim: a worker
that drains a queue polls as often."""


@dataclass(frozen=True, slots=True)
class Recovery:
    """What `recovery_behind_queue` measured (seconds, on the store's clock).

    Attributes:
        lease_s: the lease the killed worker held the run with.
        expiry_to_resume_s: from the killed attempt's lease expiry to the next AttemptStarted.
        kill_to_resume_s: from the SIGKILL to the next AttemptStarted.
        ahead: runs of the queue whose first attempt started before the killed run resumed.
        queue: runs admitted behind the killed one.
    """

    lease_s: float
    expiry_to_resume_s: float
    kill_to_resume_s: float
    ahead: int
    queue: int


async def recovery_behind_queue(
    url: str, queue: int, calls: int, lease_s: float, concurrency: int
) -> Recovery:
    """Kill a worker mid-run, admit `queue` runs behind the run, and time its recovery by a
    fresh worker process serving `concurrency` runs at once (both hold leases of `lease_s`)."""
    async with fresh_store(url) as store:
        scoped = store.scoped(SCOPE)
        run_id = await dispatch(scoped, bench_spec(calls), "the run whose worker is killed")
        killed_at = await _kill_mid_run(url, run_id, calls, lease_s)
        row = await store.get_run(SCOPE.tenant, run_id)
        if row is None or row.lease_expires_at is None:
            raise SystemExit(f"run {run_id} holds no lease after its worker was killed: {row}")
        log = await store.read(run_id, after_seq=0, limit=10_000)
        spec = bench_spec(calls)
        queued = [await dispatch(scoped, spec, f"queued {index}") for index in range(queue)]
        # It serves until stopped: a worker that drained the store and left would miss the
        # killed run when its queue is gone before the run's lease expires.
        fresh = await _worker(url, calls, concurrency, "serve", lease_s, poll_s=RECOVERY_POLL_S)
        try:
            resumed = await _next_attempt(store, run_id, log[-1].seq, fresh)
        finally:
            if fresh.returncode is None:
                fresh.terminate()
            await asyncio.wait_for(fresh.wait(), 60)
        ahead = 0
        for queued_id in queued:
            first = await store.read(queued_id, after_seq=0, limit=2)
            started = [record for record in first if isinstance(record.body, AttemptStarted)]
            ahead += bool(started) and started[0].at < resumed.at
    return Recovery(
        lease_s=lease_s,
        expiry_to_resume_s=(resumed.at - row.lease_expires_at).total_seconds(),
        kill_to_resume_s=(resumed.at - killed_at).total_seconds(),
        ahead=ahead,
        queue=queue,
    )


async def _kill_mid_run(url: str, run_id: str, calls: int, lease_s: float) -> dt.datetime:
    """Have a worker process start `run_id` and stall in it, then SIGKILL it; when it died."""
    stalled = await _worker(url, calls, 1, "stall", lease_s, stdout=True)
    try:
        assert stalled.stdout is not None
        said = await asyncio.wait_for(stalled.stdout.readline(), 60)
        if said == b"ready\n":
            said = await asyncio.wait_for(stalled.stdout.readline(), 60)
        if said != f"stalled {run_id}\n".encode():
            raise SystemExit(f"the stalling worker did not stall run {run_id} (it said {said!r})")
    finally:
        killed_at = dt.datetime.now(dt.UTC)
        if stalled.returncode is None:
            stalled.send_signal(signal.SIGKILL)
        await asyncio.wait_for(stalled.wait(), 60)
    return killed_at


async def _worker(
    url: str,
    calls: int,
    concurrency: int,
    mode: str,
    lease_s: float,
    *,
    stdout: bool = False,
    poll_s: float = 1.0,
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._worker_process",
        url,
        str(calls),
        str(concurrency),
        mode,
        "--lease",
        str(lease_s),
        "--poll",
        str(poll_s),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE if stdout else asyncio.subprocess.DEVNULL,
    )


async def _next_attempt(
    store: Store, run_id: str, after_seq: int, worker: asyncio.subprocess.Process
) -> Record:
    """The first AttemptStarted of `run_id` after `after_seq`, while `worker` serves."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        for record in await store.read(run_id, after_seq=after_seq, limit=100):
            if isinstance(record.body, AttemptStarted):
                return record
        if worker.returncode is not None:
            raise SystemExit(
                f"the fresh worker exited ({worker.returncode}) before run {run_id} ran again"
            )
        await store.wait(run_id, after_seq, timeout=0.5)
    raise SystemExit(f"run {run_id} did not run again within 600 s of its worker's death")
