"""A worker process for the workflow crash test: a checkout workflow whose tools count every
execution in a ledger file.

Run as ``python -m tests.integration.workflow_crash_worker STORE_URL LEDGER``. Fault points are
armed through the environment (``PSYCH_FAULTS``, read by `psych_runtime.testing.faults`) by the
driver that starts it; ``CRASH_LEASE_TTL`` sets the lease in seconds.

The workflow passes through every kind of step boundary a crash can cut: a first unsafe step,
two parallel branches (one safe, one unsafe), a foreach of two items at a time with an unsafe and
a safe step in each item, a wait for an event, and a step whose first try fails on purpose, so
its retry suspends the run until the backoff is due.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import sys

import psych_runtime
from psych_core import parse_call_id
from psych_runtime import CodeTool, ToolContext, WorkflowSpec
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.testing.faults import arm_from_environment
from psych_runtime.tools import ToolFunction
from psych_runtime.workflows import (
    ForeachStep,
    Obj,
    ParallelStep,
    Ref,
    Retry,
    ToolStep,
    WaitStep,
)
from tests.integration._stores import open_store

EVENT = "shipped"
ITEMS = (3, 5, 7, 11)

# An unsafe step cut off by a crash fails `outcome_unknown`; its retry runs it again under the
# same idempotency key, which a careful API recognises. The kills cut off about a third of the
# unsafe calls, and one step up to nine times in a row (a worker armed to die at its first
# call start takes over a run and starts the retry first): with a few tries, a run would now
# and then fail for running out of them, rightly, and the test with it.
TRIES = 50
AGAIN_IF_UNKNOWN = Retry(attempts=TRIES, backoff=0, on=("outcome_unknown",))

SPEC = WorkflowSpec(
    name="crash-checkout",
    steps=(
        ToolStep(
            name="open",
            tool=CodeTool(name="open_account"),
            arguments={"customer": Ref("input.customer")},
            retry=AGAIN_IF_UNKNOWN,
        ),
        ParallelStep(
            name="prepare",
            branches={
                "price": (
                    ToolStep(
                        name="quote",
                        tool=CodeTool(name="quote", safe_to_retry=True),
                        arguments={"account": Ref("steps.open.output")},
                    ),
                ),
                "stock": (
                    ToolStep(
                        name="reserve",
                        tool=CodeTool(name="reserve"),
                        arguments={"account": Ref("steps.open.output")},
                        retry=AGAIN_IF_UNKNOWN,
                    ),
                ),
            },
        ),
        ForeachStep(
            name="orders",
            items=Ref("input.items"),
            concurrency=2,
            steps=(
                ToolStep(
                    name="charge",
                    tool=CodeTool(name="charge"),
                    arguments={"cents": Ref("item")},
                    retry=AGAIN_IF_UNKNOWN,
                ),
                ToolStep(
                    name="receipt",
                    tool=CodeTool(name="receipt", safe_to_retry=True),
                    arguments={"cents": Ref("item")},
                ),
            ),
        ),
        WaitStep(name="shipped", event=EVENT),
        # Its first try fails, so every run waits for a retry: suspended, holding no worker,
        # until a worker claims it when the backoff is due.
        ToolStep(
            name="notify",
            tool=CodeTool(name="notify"),
            arguments={"customer": Ref("input.customer")},
            retry=Retry(attempts=TRIES, backoff=0.05, cap=0.4, on=("error", "outcome_unknown")),
        ),
    ),
    output=Obj(
        fields={
            "account": Ref("steps.open.output"),
            "prepared": Ref("steps.prepare.output"),
            "receipts": Ref("steps.orders.output"),
            "shipped": Ref("steps.shipped.output"),
            "notified": Ref("steps.notify.output"),
        }
    ),
)

UNSAFE = ("open_account", "reserve", "charge", "notify")
"""The tools that must never run twice for one call."""
SAFE = ("quote", "receipt")


def input_of(customer: str) -> dict[str, object]:
    """The input of one run."""
    return {"customer": customer, "items": list(ITEMS)}


def expected_output(customer: str, payload: str) -> dict[str, object]:
    """What a run for `customer` whose event carried `payload` must end with."""
    return {
        "account": f"acct-{customer}",
        "prepared": {"price": f"quote acct-{customer}", "stock": f"reserved acct-{customer}"},
        "receipts": [f"receipt {cents}" for cents in ITEMS],
        "shipped": payload,
        "notified": f"notified {customer}",
    }


class FailedOnPurpose(RuntimeError):
    """The first try of the flaky step fails, so every run retries it."""


def _ledger(kind: str, ctx: ToolContext) -> None:
    # fsync before the effect "happens": a kill right after still leaves the line on disk.
    line = f"{kind} {ctx.idempotency_key} {ctx.call_id} {ctx.attempt} {os.getpid()}\n"
    with open(sys.argv[2], "a", encoding="utf-8") as ledger:
        ledger.write(line)
        ledger.flush()
        os.fsync(ledger.fileno())


async def _effect(kind: str, ctx: ToolContext) -> None:
    _ledger(kind, ctx)
    # A short while in flight, so random kills also land inside tools.
    await asyncio.sleep(random.uniform(0, 0.02))


async def open_account(customer: str, ctx: ToolContext) -> str:
    """Open an account (not safe to run twice)."""
    await _effect("unsafe", ctx)
    return f"acct-{customer}"


async def quote(account: str, ctx: ToolContext) -> str:
    """Price the order (safe to run again)."""
    await _effect("safe", ctx)
    return f"quote {account}"


async def reserve(account: str, ctx: ToolContext) -> str:
    """Reserve stock (not safe to run twice)."""
    await _effect("unsafe", ctx)
    return f"reserved {account}"


async def charge(cents: int, ctx: ToolContext) -> str:
    """Charge an amount (not safe to run twice)."""
    await _effect("unsafe", ctx)
    return f"charged {cents}"


async def receipt(cents: int, ctx: ToolContext) -> str:
    """Write a receipt (safe to run again)."""
    await _effect("safe", ctx)
    return f"receipt {cents}"


async def notify(customer: str, ctx: ToolContext) -> str:
    """Notify the customer (not safe to run twice); its first try always fails."""
    await _effect("unsafe", ctx)
    if parse_call_id(ctx.call_id).attempt == 1:
        raise FailedOnPurpose(f"{ctx.call_id}: the first try fails on purpose")
    return f"notified {customer}"


TOOLS: list[ToolFunction] = [open_account, quote, reserve, charge, receipt, notify]


async def main() -> None:
    store = open_store(sys.argv[1])
    worker = psych_runtime.Worker(
        store,
        psych_runtime.Runtime(
            model=FakeModel(),
            tools=TOOLS,
            leases=psych_runtime.Leases(
                ttl=dt.timedelta(seconds=float(os.environ.get("CRASH_LEASE_TTL", "1.0"))),
                max_attempts=1000,
            ),
        ),
        concurrency=4,
        poll_interval=0.05,
    )
    await worker.run()


if __name__ == "__main__":
    arm_from_environment()  # PSYCH_FAULTS, set by the driver that started this process
    asyncio.run(main())
