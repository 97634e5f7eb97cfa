"""The worker process: runs what the server admits, on the same store, until SIGTERM or Ctrl-C.

    python -m psych_playground worker

Start as many as you like (they share the store; on SQLite, the processes of one host). A
worker that dies mid-run loses nothing: another takes the run over once its lease expires, and
the console shows it stuck until then.
"""

from __future__ import annotations

import datetime as dt
from contextlib import AsyncExitStack

from psych_playground.demo_model import DemoModel
from psych_playground.demo_tools import DEMO_TOOLS
from psych_playground.settings import Settings
from psych_playground.stores import display_url, open_live_channel, open_store, parse_store_url
from psych_runtime import EnvSecretResolver, Leases, OpenAIChatClient, Runtime, Worker
from psych_runtime.ports import ModelClient

CONCURRENCY = 4
POLL_SECONDS = 0.2


def choose_model(settings: Settings) -> ModelClient:
    """A real model when OPENAI_API_KEY is set (OPENAI_BASE_URL for another OpenAI-compatible
    endpoint); otherwise the offline demo model."""
    if settings.openai_api_key:
        return OpenAIChatClient()
    return DemoModel(delay=settings.demo_delay)


async def run_worker(settings: Settings) -> None:
    """Serve runs until SIGTERM or SIGINT; then let each attempt finish its step, and return."""
    url = parse_store_url(settings.store_url)
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(url))
        await store.migrate()
        live = open_live_channel(url)
        if live is not None:
            stack.push_async_callback(live.close)
        model = choose_model(settings)
        if isinstance(model, OpenAIChatClient):
            stack.push_async_callback(model.aclose)
        runtime = Runtime(
            model=model,
            tools=DEMO_TOOLS,
            # The key's value is redacted from every record, should a model or tool repeat it.
            secrets=EnvSecretResolver(["OPENAI_API_KEY"]),
            leases=Leases(ttl=dt.timedelta(seconds=settings.lease_seconds)),
            live=live,
        )
        worker = Worker(store, runtime, concurrency=CONCURRENCY, poll_interval=POLL_SECONDS)
        print(
            f"psych-playground worker {worker.worker_id}: serving runs from "
            f"{display_url(settings.store_url)} with the {settings.model_kind} model",
            flush=True,
        )
        await worker.run()
