"""What a request handler does: admit the run, print its id, return at once."""

from __future__ import annotations

import asyncio

from agent import spec, store

import psych_runtime


async def main() -> None:
    db = store()
    await db.migrate()
    scoped = db.scoped(psych_runtime.Scope(tenant="acme"))
    run_id = await psych_runtime.dispatch(scoped, spec, "where is order A1?")
    print(run_id)


asyncio.run(main())
