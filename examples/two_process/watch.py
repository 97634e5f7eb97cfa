"""Print a run's status until it ends: python watch.py RUN_ID."""

from __future__ import annotations

import asyncio
import sys

from agent import store

import psych_runtime

FINAL = {"completed", "failed", "cancelled"}


async def main(run_id: str) -> None:
    scoped = store().scoped(psych_runtime.Scope(tenant="acme"))
    last = None
    while True:
        status = await psych_runtime.status(scoped, run_id)
        if status.status != last:
            print(status.status)
            last = status.status
        if status.status in FINAL:
            break
        await asyncio.sleep(0.1)
    report = await psych_runtime.report(scoped, run_id)
    print(report.output)


asyncio.run(main(sys.argv[1]))
