"""The quick-start agent against a real model when OPENAI_API_KEY is set; offline otherwise.

    OPENAI_API_KEY=sk-... uv run python examples/real_model.py   # a real provider
    uv run python examples/real_model.py                         # the fake model, offline

OPENAI_BASE_URL points it at any OpenAI-compatible server, OPENAI_MODEL picks the model
(gpt-4o-mini by default). The API key is read by name and never enters the run's log.
"""

import asyncio
import os

import psych_runtime
from psych_runtime import EnvSecretResolver, OpenAIChatClient
from psych_runtime.ports import ModelClient
from psych_runtime.testing.fake_model import FakeModel

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")


async def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}


spec = psych_runtime.AgentSpec(
    name="support",
    instructions="Help the customer with their order. Use lookup_order to check an order.",
    model=psych_runtime.ModelRef(model=MODEL),
    tools=(psych_runtime.CodeTool(name="lookup_order"),),
)


def choose_model() -> tuple[ModelClient, str]:
    if os.environ.get("OPENAI_API_KEY"):
        client = OpenAIChatClient()
        return client, f"the real model {MODEL} at {client.base_url}"
    fake = (
        FakeModel()
        .turn(text="Checking.", tool_calls=[("lookup_order", {"order_id": "A1"})])
        .turn(text="A1 has shipped.")
    )
    return fake, "the fake model (set OPENAI_API_KEY to use a real one)"


async def main() -> None:
    model, which = choose_model()
    print(f"Using {which}.")
    secrets = EnvSecretResolver(["OPENAI_API_KEY"])
    try:
        async with psych_runtime.session(
            runtime=psych_runtime.Runtime(model=model, tools=[lookup_order], secrets=secrets)
        ) as s:
            view = await s.ask(spec, "where is order A1?")
            print(view.text if view.status == "completed" else f"The run failed: {view.error}")

            totals = (await psych_runtime.report(s.store, view.run_id)).totals
            sources = ", ".join(f"{n} {source}" for source, n in totals.usage_sources.items())
            unknown = (
                f"unknown ({totals.unpriced_calls} calls unpriced)"
                if totals.unpriced_calls
                else f"none (no model call answered; {totals.failed_calls} failed)"
            )
            cost = totals.cost or unknown
            print(f"Usage: {totals.usage} ({sources or 'no answer'}). Cost: {cost}.")
    finally:
        if isinstance(model, OpenAIChatClient):
            await model.aclose()


asyncio.run(main())
