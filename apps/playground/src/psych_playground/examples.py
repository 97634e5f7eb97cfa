"""The example specs: starting points for the editor, published at first start.

`support` is an agent with the demo tools: it looks orders up, refunds them (a refund over 100
waits for a person's approval, with the arguments shown and editable), fetches a page whose
content is hostile, waits, and may ask the user a question. `order_check` is a workflow over
the same tools: look the order up, ask a person, refund only on "yes".
"""

from __future__ import annotations

import json

from psych_playground.demo_tools import lookup_order, refund
from psych_runtime import AgentSpec, ArgRule, CodeTool, ModelRef, WorkflowSpec
from psych_runtime.workflows import Workflow, eq, lit, ref

MODEL = "gpt-4.1-mini"
"""The model the examples name: what OpenAIChatClient asks for when OPENAI_API_KEY is set; the
demo model answers for any name."""

SUPPORT = AgentSpec(
    name="support",
    instructions=(
        "You help customers with their orders. Look an order up before you answer about it; "
        "refund only what the customer asks for. Ask the customer when you are unsure."
    ),
    model=ModelRef(model=MODEL),
    tools=(
        # Reading changes nothing: safe to run again after a crash.
        CodeTool(name="lookup_order", safe_to_retry=True),
        # Moving money: a refund over 100 waits for a person, who may edit the amount.
        CodeTool(name="refund", requires_approval=ArgRule("amount", "gt", 100)),
        CodeTool(name="fetch_page", safe_to_retry=True),
        CodeTool(name="wait_a_bit", safe_to_retry=True),
    ),
    ask_user=True,
    # High enough for `repeat 2000 lookup_order`: one model call per tool call, and one more.
    max_turns=5000,
)


def _order_check() -> WorkflowSpec:
    flow = Workflow(
        "order_check",
        input_schema={
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    )
    flow.tool("lookup", lookup_order, order_id=ref("input.order_id")).tool_options(
        safe_to_retry=True
    )
    flow.human("confirm", "Refund this order? Answer yes or no.")
    flow.tool("refund", refund, order_id=ref("input.order_id"), amount=lit(20)).when(
        eq(ref("steps.confirm.output"), "yes")
    )
    flow.output(ref("steps.lookup.output"))
    return flow.build()


ORDER_CHECK = _order_check()

EXAMPLE_INPUTS = {
    "support": "where is order A1?",
    "order_check": json.dumps({"order_id": "A1"}),
}
"""A first message for each example, for documentation and tests."""
