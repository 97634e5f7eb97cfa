"""A benchmark worker process.

    python -m bench._worker_process URL CALLS CONCURRENCY          serve runs until none is left
    python -m bench._worker_process URL CALLS CONCURRENCY serve    serve until SIGTERM

In ``serve`` mode the worker polls only once a second, so it learns of new work from the
store's notifications (LISTEN/NOTIFY on PostgreSQL) or from its polling, as a deployed worker
does; it prints ``ready`` once it is serving.
"""

from __future__ import annotations

import asyncio
import sys

from bench._agent import StepModel, step
from bench._stores import open_bench_store
from psych_runtime import Runtime, Worker


async def main(url: str, calls: int, concurrency: int, serve: bool) -> None:
    store = open_bench_store(url)
    try:
        if serve:
            worker = Worker(
                store, Runtime(model=StepModel(calls), tools=[step]), concurrency=concurrency
            )
            await store.migrate()
            print("ready", flush=True)
            await worker.run()
        else:
            worker = Worker(
                store,
                Runtime(model=StepModel(calls), tools=[step]),
                concurrency=concurrency,
                poll_interval=0.05,
            )
            await worker.run_until_idle()
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            await close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:5] == ["serve"]))
