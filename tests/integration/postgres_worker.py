"""The crash test's worker process, with the Postgres store's log lines on standard error.

    python -m tests.integration.postgres_worker STORE_URL LEDGER

Same agent, model and tools as `crash_worker` (an effect that may repeat, one that must not);
the store's messages about waiting for the database and re-sending in-flight calls are printed,
so a test can see that the workers rode through a server restart by retrying.
"""

from __future__ import annotations

import asyncio
import logging

from tests.integration import crash_worker

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    logging.getLogger("psych_store_postgres").setLevel(logging.INFO)
    asyncio.run(crash_worker.main())
