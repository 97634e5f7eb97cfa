"""One model turn: the request from a run's state, and the record from the model's answer."""

from __future__ import annotations

from psych_core import (
    ModelCallFailed,
    ModelCallFinished,
    ModelError,
    ModelRequest,
    ModelResponse,
    RunState,
    SpecError,
    ToolCall,
    ToolDefinition,
)


def build_request(state: RunState, tools: tuple[ToolDefinition, ...]) -> ModelRequest:
    """The request for the next model call of `state` (a state folded with its spec)."""
    spec = state.spec
    if spec is None:
        raise SpecError(f"run {state.run_id}: a model request needs the run's spec")
    return ModelRequest(
        run_id=state.run_id,
        model=spec.model,
        instructions=spec.system_prompt,
        messages=state.conversation.messages(),
        tools=tools,
        output_schema=spec.output_type,
    )


def finished_record(response: ModelResponse, seq: int) -> ModelCallFinished:
    """The `ModelCallFinished` body for `response`, written at `seq`: calls named ``seq.i``."""
    calls = tuple(
        ToolCall(
            call_id=f"{seq}.{index}",
            name=call.name,
            arguments=call.arguments,
            provider_call_id=call.provider_call_id,
        )
        for index, call in enumerate(response.tool_calls)
    )
    return ModelCallFinished(
        model=response.model,
        text=response.text,
        tool_calls=calls,
        usage=response.usage,
        usage_source="missing" if response.usage is None else response.usage_source,
        cost=response.cost,
        finish_reason=response.finish_reason,
    )


def failed_record(error: BaseException, model: str) -> ModelCallFailed:
    """The `ModelCallFailed` body for a call to `model` that raised `error`."""
    if isinstance(error, ModelError):
        return ModelCallFailed(
            model=error.model or model,
            error=str(error),
            status=error.status,
            retryable=error.retryable,
        )
    return ModelCallFailed(model=model, error=f"{type(error).__name__}: {error}")
