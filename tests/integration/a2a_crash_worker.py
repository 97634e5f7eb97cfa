"""A worker process for the A2A crash test: one turn calls two slow skills of the demo peer,
``slow`` (untagged: unsafe to run again) and ``slow_read`` (tagged idempotent: safe).

Run as ``python -m tests.integration.a2a_crash_worker STORE_URL PEER_URL``: it serves every
run of `SPEC` in the store until SIGTERM. Leases are short, so another worker takes a run over
soon after this one is killed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys

import psych_runtime
from psych_runtime import AgentSpec, Leases, ModelRef, Runtime
from psych_runtime.a2a import A2AHttp, A2APeer
from psych_runtime.model.egress import EgressPolicy
from tests.integration._scripted import ByTurn, Calls
from tests.integration._stores import open_store

SPEC = AgentSpec(
    name="a2a-crash",
    model=ModelRef(model="scripted"),
    tools=(A2APeer(name="peer", timeout=120),),
    max_turns=4,
)

SECONDS = 5
"""How long each of the two slow skills works: long enough to kill the worker in the middle."""

TURNS: list[Calls] = [
    [
        ("peer__slow", {"message": "a", "data": {"seconds": SECONDS}}),
        ("peer__slow_read", {"message": "b", "data": {"seconds": SECONDS}}),
    ],
    [],
]


async def main() -> None:
    store = open_store(sys.argv[1])
    worker = psych_runtime.Worker(
        store,
        Runtime(
            model=ByTurn(TURNS),
            a2a_peers={"peer": A2AHttp(url=sys.argv[2])},
            egress=EgressPolicy(allow_loopback=True),
            leases=Leases(ttl=dt.timedelta(seconds=2)),
        ),
        poll_interval=0.05,
    )
    print("ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
