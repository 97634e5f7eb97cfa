"""Follow a run from its own process: python -m tests.integration.stream_process URL RUN AFTER.

Prints one line per record, ``seq type``, as records land, and exits when the run ends.
"""

from __future__ import annotations

import asyncio
import sys

import psych_runtime
from tests.integration._stores import open_store
from tests.integration.approval_process import SCOPE


async def main(url: str, run_id: str, after: int) -> None:
    scoped = open_store(url).scoped(SCOPE)
    print("following", flush=True)
    async for record in psych_runtime.stream(scoped, run_id, after, poll=0.05):
        print(record.seq, record.body.type, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
