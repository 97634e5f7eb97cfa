"""A benchmark worker process: serves runs until none is left."""

from __future__ import annotations

import asyncio
import sys

from bench._agent import StepModel, step
from bench._stores import open_bench_store
from psych_runtime import Worker


async def main(url: str, calls: int, concurrency: int) -> None:
    store = open_bench_store(url)
    worker = Worker(
        store, model=StepModel(calls), tools=[step], concurrency=concurrency, poll_interval=0.05
    )
    await worker.run_until_idle()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
