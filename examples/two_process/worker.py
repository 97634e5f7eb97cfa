"""A worker process: runs what handlers admit, until SIGTERM or Ctrl-C (or idle, with --idle)."""

from __future__ import annotations

import asyncio
import sys

from agent import DemoModel, lookup_order, store

import psych_runtime


async def main() -> None:
    db = store()
    await db.migrate()
    worker = psych_runtime.Worker(
        db, psych_runtime.Runtime(model=DemoModel(), tools=[lookup_order])
    )
    if "--idle" in sys.argv:
        await worker.run_until_idle()
    else:
        await worker.run()


asyncio.run(main())
