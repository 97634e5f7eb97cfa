"""A worker whose model streams from a scripted server and publishes live text by NOTIFY.

    python -m tests.integration.live_worker STORE_URL MODEL_BASE_URL

STORE_URL is ``postgresql://...?schema=NAME``: the store and the live channel share the
database and the schema. It serves runs until SIGTERM.
"""

from __future__ import annotations

import asyncio
import sys
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psych_runtime
from psych_runtime import EgressPolicy, OpenAIChatClient
from psych_store_postgres import PostgresLiveChannel
from tests.integration._stores import open_store


def live_channel(url: str) -> PostgresLiveChannel:
    """The live channel beside the Postgres store that `open_store(url)` opens."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    schema = options.pop("schema", "psych")
    options.pop("max_size", None)
    return PostgresLiveChannel(urlunsplit(parts._replace(query=urlencode(options))), schema=schema)


async def main(url: str, base_url: str) -> None:
    store = open_store(url)
    model = OpenAIChatClient(
        base_url, api_key_secret=None, egress=EgressPolicy(allow_loopback=True)
    )
    async with model, live_channel(url) as live:
        runtime = psych_runtime.Runtime(model=model, live=live)
        await psych_runtime.Worker(store, runtime).run()
    await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
