"""A worker process for the MCP crash test: one turn calls two slow tools of the demo MCP
server, one unannotated (unsafe to run again) and one read-only (safe to run again).

Run as ``python -m tests.integration.mcp_crash_worker STORE_URL LEDGER``: it serves every run
of `SPEC` in the store until SIGTERM. The demo server (over stdio) appends each effect to
LEDGER. Leases are short, so another worker takes a run over soon after this one is killed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
from pathlib import Path

import psych_runtime
from psych_runtime import AgentSpec, Leases, ModelRef, Runtime
from psych_runtime.mcp import McpServer
from tests.integration._mcp import demo_stdio
from tests.integration._scripted import ByTurn, Calls
from tests.integration._stores import open_store

SPEC = AgentSpec(
    name="mcp-crash",
    model=ModelRef(model="scripted"),
    tools=(McpServer(name="demo", timeout=120),),
    max_turns=4,
)

SECONDS = 5
"""How long each of the two slow calls takes: long enough to kill the worker in the middle."""

TURNS: list[Calls] = [
    [("demo__slow", {"seconds": SECONDS}), ("demo__slow_read", {"seconds": SECONDS})],
    [],
]


async def main() -> None:
    store = open_store(sys.argv[1])
    worker = psych_runtime.Worker(
        store,
        Runtime(
            model=ByTurn(TURNS),
            mcp_servers={"demo": demo_stdio(Path(sys.argv[2]))},
            leases=Leases(ttl=dt.timedelta(seconds=2)),
        ),
        poll_interval=0.05,
    )
    print("ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
