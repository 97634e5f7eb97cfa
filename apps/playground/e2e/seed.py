"""The stores of the playground's browser tests: what the HTTP API cannot make, written through
the public Python API, and their removal afterwards. apps/playground/e2e/serve.sh runs it around
the server (`python -m psych_playground dev`) of one test session.

    python apps/playground/e2e/seed.py --store sqlite:////tmp/psych-playground-e2e-x/p.db stuck
    python apps/playground/e2e/seed.py --store URL discard

``stuck``, before the server and its worker start: admits a run of the example agent
(``support``) and claims it three times as a worker that never appends anything, the last
claim under a lease of an hour. The run has not ended, its attempts have climbed to 3 and no
other worker can take it: what the console shows as stuck. No worker runs yet, so none can
take the run between two of the claims. Prints ``{"run_id": ..., "attempt": 3}``.

``discard``, once the server has stopped: removes the store, when a test session made it for
itself: the SQLite file in a ``psych-playground-e2e-*`` folder, or the PostgreSQL schema named
``e2e_*`` (and the playground's catalog beside it). It touches no other store.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import re
import sys
import urllib.parse
from pathlib import Path

import asyncpg

from psych_playground.examples import SUPPORT
from psych_runtime import Scope, dispatch
from psych_runtime.ports import Store
from psych_store_sqlite import SQLiteStore

TENANT = "default"
"""The tenant the playground serves when PSYCH_TENANT is not set."""
GHOST = "e2e-ghost-worker"
"""The worker id of the claims that never make progress."""
STUCK_CLAIMS = 3
"""Claims at which a run that has neither suspended nor ended counts as stuck."""
SHORT = dt.timedelta(milliseconds=20)
HELD = dt.timedelta(hours=1)
SESSION_SCHEMA = re.compile(r"^e2e_[a-z0-9_]{1,50}$")
"""The schemas a test session makes for itself; `discard` drops no other."""
SESSION_FOLDER = "psych-playground-e2e-"
"""The start of the name of the folder a test session keeps its SQLite file in."""


def session_file(url: str) -> Path:
    """The SQLite file `url` names, which must be in a test session's folder."""
    scheme, _, rest = url.partition("://")
    path = Path(urllib.parse.unquote(rest[1:])) if rest.startswith("/") else Path()
    if (
        scheme != "sqlite"
        or not path.is_absolute()
        or not path.parent.name.startswith(SESSION_FOLDER)
    ):
        raise SystemExit(
            f"seed: {url!r} is not the SQLite file of a test session "
            f"(sqlite:////.../{SESSION_FOLDER}*/NAME.db)"
        )
    return path


async def stuck(store: Store, tenant: str) -> dict[str, object]:
    """Admit a run of `SUPPORT` and claim it `STUCK_CLAIMS` times as `GHOST`, holding the last
    claim. Call it while no other worker serves the store."""
    await store.migrate()
    run_id = await dispatch(store.scoped(Scope(tenant=tenant)), SUPPORT, "a run nobody finishes")
    attempt = 0
    for number in range(1, STUCK_CLAIMS + 1):
        held = number == STUCK_CLAIMS
        claim = await store.claim(GHOST, HELD if held else SHORT, run_id=run_id)
        if claim is None:
            raise SystemExit(
                f"seed: run {run_id} could not be claimed a {number}. time: is a worker serving "
                "the store already? Seed it before the server starts"
            )
        attempt = claim.attempt
        if not held:
            await asyncio.sleep(2 * SHORT.total_seconds())  # the lease runs out
    return {"run_id": run_id, "attempt": attempt}


async def discard(url: str) -> dict[str, object]:
    """Remove the store `url` names, when a test session made it for itself."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "sqlite":
        path = session_file(url)
        removed = []
        for suffix in ("", "-wal", "-shm", "-journal"):
            file = path.with_name(path.name + suffix)
            if file.exists():
                file.unlink()
                removed.append(file.name)
        return {"removed": removed}
    options = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in options if key == "schema"), "")
    if parts.scheme not in ("postgresql", "postgres") or not SESSION_SCHEMA.match(schema):
        raise SystemExit(f"seed: {url!r} is not the PostgreSQL schema of a test session")
    query = urllib.parse.urlencode([(key, value) for key, value in options if key != "schema"])
    connection = await asyncpg.connect(urllib.parse.urlunsplit(parts._replace(query=query)))
    # The playground keeps its catalog of specs beside the store, in <schema>_playground.
    dropped = [schema, f"{schema}_playground"]
    try:
        for name in dropped:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        await connection.close()
    return {"dropped": dropped}


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--store", required=True, help="the server's PSYCH_STORE")
    parser.add_argument("--tenant", default=TENANT)
    parser.add_argument("what", choices=["stuck", "discard"])
    args = parser.parse_args(argv)
    if args.what == "discard":
        result = await discard(args.store)
    else:
        async with SQLiteStore(session_file(args.store)) as store:
            result = await stuck(store, args.tenant)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
