"""Processes for the approval tests: a handler, a worker and an approver, each on its own.

python -m tests.integration.approval_process dispatch STORE_URL
python -m tests.integration.approval_process worker STORE_URL LEDGER
python -m tests.integration.approval_process approve STORE_URL RUN_ID CALL_ID BY
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, ModelRef, Scope, ToolContext
from psych_runtime.ports import AssistantMessage, ModelRequest, ModelResponse, ModelToolCall
from psych_runtime.testing.faults import arm_from_environment
from tests.integration._stores import open_store

SCOPE = Scope(tenant="shop")
SPEC = AgentSpec(
    name="refunds",
    model=ModelRef(model="scripted"),
    tools=(CodeTool(name="refund", requires_approval=True),),
)


class RefundModel:
    """Asks for one refund, then answers: decided from the conversation alone."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if not any(isinstance(m, AssistantMessage) for m in request.messages):
            call = ModelToolCall(name="refund", arguments='{"order_id": "A1", "amount": 120}')
            return ModelResponse(model="scripted", tool_calls=(call,))
        return ModelResponse(model="scripted", text="Refunded.")


async def main(command: str, url: str, *args: str) -> None:
    store = open_store(url)
    await store.migrate()
    scoped = store.scoped(SCOPE)
    if command == "dispatch":
        print(await psych_runtime.dispatch(scoped, SPEC, "refund A1"), flush=True)
    elif command == "approve":
        run_id, call_id, by = args
        print(await psych_runtime.approve(scoped, run_id, call_id, by=by), flush=True)
    elif command == "worker":
        (ledger,) = args

        def refund(order_id: str, amount: int, ctx: ToolContext) -> str:
            """Refund an order."""
            with open(ledger, "a", encoding="utf-8") as out:
                out.write(f"{ctx.idempotency_key} {amount} {os.getpid()}\n")
                out.flush()
                os.fsync(out.fileno())
            return f"refunded {amount}"

        worker = psych_runtime.Worker(
            store,
            psych_runtime.Runtime(
                model=RefundModel(),
                tools=[refund],
                leases=psych_runtime.Leases(ttl=dt.timedelta(seconds=1.5)),
            ),
            poll_interval=0.05,
        )
        await worker.run()
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    arm_from_environment()  # PSYCH_FAULTS, set by the test that started this process
    asyncio.run(main(sys.argv[1], sys.argv[2], *sys.argv[3:]))
