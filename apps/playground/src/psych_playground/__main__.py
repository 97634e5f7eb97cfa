"""The playground's processes.

    python -m psych_playground serve    the API and the UI (uvicorn), on PLAYGROUND_HOST:PORT
    python -m psych_playground worker   a worker on the same store: runs what the server admits
    python -m psych_playground dev      both, as two child processes; Ctrl-C stops both

Settings come from the environment (see `psych_playground.settings`): PSYCH_STORE, PSYCH_TENANT,
PLAYGROUND_HOST, PLAYGROUND_PORT, PLAYGROUND_LEASE_SECONDS, PLAYGROUND_DEMO_DELAY, and
OPENAI_API_KEY for a real model (the offline demo model without it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from psych_playground.launch import run_dev, serve
from psych_playground.settings import Settings, SettingsError
from psych_playground.stores import StoreUrlError, parse_store_url
from psych_playground.worker import run_worker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m psych_playground",
        description="Psych Runtime's example console. An example: not for the internet.",
    )
    parser.add_argument("command", choices=("serve", "worker", "dev"))
    command = parser.parse_args(argv).command
    try:
        settings = Settings.from_env(os.environ)
        parse_store_url(settings.store_url)
    except (SettingsError, StoreUrlError) as error:
        print(f"psych-playground: {error}", file=sys.stderr)
        return 2
    if command == "serve":
        serve(settings)
        return 0
    if command == "worker":
        asyncio.run(run_worker(settings))
        return 0
    return run_dev(settings)


if __name__ == "__main__":
    sys.exit(main())
