"""Compacting a conversation (`AgentSpec.compaction`): one summarising model call.

The part summarised is sent as one plain transcript in a user message, not as the original
messages: a transcript carries tool calls and results to any provider without offering tools,
and the summarising model (often a cheaper one) never sees a call it could try to make.
"""

from __future__ import annotations

import asyncio

from psych_core import (
    AgentSpec,
    AssistantMessage,
    Body,
    CompactionFailed,
    ConversationCompacted,
    Message,
    ModelClient,
    ModelRequest,
    RunState,
    ToolResultMessage,
    UserMessage,
)
from psych_core._compaction import SUMMARY_INSTRUCTIONS
from psych_runtime.model._pricing import PriceTable
from psych_runtime.model._turn import call_cost, failure_record

ASK = "Summarise the conversation above, as your instructions say."


async def compact(
    state: RunState, model: ModelClient, kept_from: int, prices: PriceTable | None
) -> list[Body]:
    """The records of summarising `state`'s conversation before message `kept_from`."""
    spec = state.spec
    assert isinstance(spec, AgentSpec)
    assert spec.compaction is not None
    policy = spec.compaction
    ref = policy.model or spec.model
    view = state.request_messages()
    # The view opens with the last summary when there is one, then the messages kept since.
    cut = kept_from - state.kept_from + (1 if state.summary is not None else 0)
    request = ModelRequest(
        run_id=state.run_id,
        model=ref,
        instructions=policy.instructions or SUMMARY_INSTRUCTIONS,
        messages=(UserMessage(transcript(view[:cut]) + "\n\n" + ASK),),
        tools=(),
    )
    try:
        response = await model.complete(request)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error = f"run {state.run_id}, seq {state.next_seq}: summarising failed: {exc}"
        return [CompactionFailed(model=ref.model, error=error)]
    failed: list[Body] = [failure_record(failure) for failure in response.failures]
    if not (response.text or "").strip():
        error = (
            f"run {state.run_id}, seq {state.next_seq}: model {response.model!r} returned no "
            "summary text"
        )
        return [*failed, CompactionFailed(model=response.model, error=error)]
    done = ConversationCompacted(
        kept_from=kept_from,
        summary=(response.text or "").strip(),
        tokens=state.context_tokens or 0,
        model=response.model,
        usage=response.usage,
        usage_source="missing" if response.usage is None else response.usage_source,
        cost=call_cost(response, prices),
    )
    return [*failed, done]


def transcript(messages: tuple[Message, ...]) -> str:
    """`messages` as plain text, one paragraph per message, naming who said it."""
    parts: list[str] = []
    for message in messages:
        match message:
            case UserMessage(text=text):
                parts.append(f"USER: {text}")
            case AssistantMessage(text=text, tool_calls=calls):
                if text:
                    parts.append(f"ASSISTANT: {text}")
                parts.extend(f"ASSISTANT calls {c.name}({c.arguments})" for c in calls)
            case ToolResultMessage(name=name, content=content, is_error=is_error):
                label = "TOOL ERROR" if is_error else "TOOL RESULT"
                parts.append(f"{label} ({name}): {content}")
    return "\n\n".join(parts)
