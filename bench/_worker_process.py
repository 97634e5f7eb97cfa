"""A benchmark worker process.

    python -m bench._worker_process URL CALLS CONCURRENCY [--lease S]          drain
    python -m bench._worker_process URL CALLS CONCURRENCY serve [--lease S] [--poll S]
                                                                              serve until SIGTERM
    python -m bench._worker_process URL CALLS CONCURRENCY stall [--lease S]    stall a run
    python -m bench._worker_process URL CALLS CONCURRENCY race                 drain on "go"

Without a mode the worker serves runs until none is left. In ``serve`` mode it serves until
it is stopped, polling once a second (``--poll``: another interval), so it learns of new work
from the store's notifications (LISTEN/NOTIFY on PostgreSQL) or from its polling, as a
deployed worker does; it prints ``ready`` once it is serving. In ``stall`` mode the tool's
second call never returns: the worker prints ``stalled RUN_ID`` once a run is stuck in it, and
keeps renewing that run's lease until it is killed (as a worker stuck on a slow tool does). In
``race`` mode it connects, prints ``ready``, and drains the store once a line arrives on its
stdin: processes started together begin together, their start-up (the interpreter, the
imports, the connections) left out of the time measured; once drained it prints ``cpu
SECONDS``, the CPU time it used since the word (all its threads). ``--lease`` is the claims'
lease in seconds (`Leases.ttl`; the runtime's default without it).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import time

from bench._agent import StepModel, step
from bench._arguments import seconds
from bench._stores import open_bench_store
from psych_runtime import CodeFunction, Leases, Runtime, ToolContext, Worker

STALLED_AT = 1
"""The index of the call that never returns in ``stall`` mode (its run is mid-way)."""


async def _stalling_step(index: int, context: ToolContext) -> dict[str, int]:
    """`step`, except that its call `STALLED_AT` waits forever."""
    if index == STALLED_AT:
        print(f"stalled {context.run_id}", flush=True)
        await asyncio.Event().wait()
    return await step(index)


async def main(
    url: str, calls: int, concurrency: int, mode: str, lease_s: float | None, poll_s: float
) -> None:
    store = open_bench_store(url)
    tool = CodeFunction.of(_stalling_step, name="step") if mode == "stall" else step
    leases = Leases() if lease_s is None else Leases(ttl=dt.timedelta(seconds=lease_s))
    runtime = Runtime(model=StepModel(calls), tools=[tool], leases=leases)
    try:
        if mode in ("drain", "race"):
            worker = Worker(store, runtime, concurrency=concurrency, poll_interval=0.05)
            if mode == "race":
                await store.migrate()  # connects, as the first claim would
                print("ready", flush=True)
                await asyncio.to_thread(sys.stdin.readline)
            started = time.process_time()
            await worker.run_until_idle()
            if mode == "race":
                print(f"cpu {time.process_time() - started:.6f}", flush=True)
        else:
            worker = Worker(store, runtime, concurrency=concurrency, poll_interval=poll_s)
            await store.migrate()
            print("ready", flush=True)
            await worker.run()
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            await close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("calls", type=int)
    parser.add_argument("concurrency", type=int)
    parser.add_argument(
        "mode", nargs="?", choices=("drain", "serve", "stall", "race"), default="drain"
    )
    parser.add_argument("--lease", type=seconds, default=None, help="Leases.ttl in seconds")
    parser.add_argument(
        "--poll", type=seconds, default=1.0, help="the longest wait between claims when idle (s)"
    )
    args = parser.parse_args()
    asyncio.run(main(args.url, args.calls, args.concurrency, args.mode, args.lease, args.poll))
