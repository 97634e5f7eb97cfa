"""A process that migrates one PostgreSQL schema at the same moment as others: started by
test_postgres_store.py.

    python -m tests.contract._postgres_process DSN SCHEMA GO_FILE

It prints ``ready`` once started, waits for GO_FILE to exist (so all start together), runs
`migrate()`, and prints ``migrated``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from psych_store_postgres import PostgresStore


def wait_for(go: Path) -> None:
    deadline = time.monotonic() + 30
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{go} never appeared")
        time.sleep(0.001)


async def main(dsn: str, schema: str, go: Path) -> None:
    async with PostgresStore(dsn, schema=schema, min_size=1, max_size=1) as store:
        print("ready", flush=True)
        await asyncio.to_thread(wait_for, go)
        await store.migrate()
    print("migrated", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
