"""A process that migrates a MySQL database: started by test_mysql_store.py.

    python _mysql_process.py URL GO_FILE

It prints ``ready`` once its store is connected, waits for GO_FILE to exist (so several
processes start at once), runs ``migrate()`` and prints ``migrated``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from psych_store_mysql import MySQLStore


async def main(url: str, go: Path) -> None:
    async with MySQLStore(url) as store:
        await store.server()  # connected: what is left is the migration itself
        print("ready", flush=True)
        deadline = time.monotonic() + 30
        while not await asyncio.to_thread(go.exists):
            if time.monotonic() > deadline:
                raise SystemExit(f"{go} never appeared")
            await asyncio.sleep(0.001)
        await store.migrate()
        print("migrated", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
