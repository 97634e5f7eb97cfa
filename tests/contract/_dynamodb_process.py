"""A process that runs `DynamoDBStore.migrate` on a table: started by test_dynamodb_store.py.

    python _dynamodb_process.py ENDPOINT TABLE GO_FILE

It prints ``ready`` once the store is open, waits for GO_FILE to exist (so several processes
start at once), runs `migrate`, and prints ``migrated``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import aioboto3  # type: ignore[import-untyped]

from psych_store_dynamodb import DynamoDBStore


def wait_for(go: Path) -> None:
    """Block until GO_FILE exists."""
    deadline = time.monotonic() + 30
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{go} never appeared")
        time.sleep(0.001)


async def main(endpoint: str, table: str, go: Path) -> None:
    session = aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    async with DynamoDBStore(
        table, endpoint_url=endpoint, region_name="us-east-1", session=session
    ) as store:
        print("ready", flush=True)
        await asyncio.to_thread(wait_for, go)
        await store.migrate()
        print("migrated", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
