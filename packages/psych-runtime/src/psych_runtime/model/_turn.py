"""One model turn: the request from a run's state, and the record from the model's answer."""

from __future__ import annotations

from psych_core import (
    AgentSpec,
    Cost,
    ModelCallFailed,
    ModelCallFinished,
    ModelError,
    ModelFailure,
    ModelRequest,
    ModelResponse,
    RunState,
    SpecError,
    ToolCall,
    ToolDefinition,
)
from psych_runtime.model._pricing import PriceTable


def build_request(state: RunState, tools: tuple[ToolDefinition, ...]) -> ModelRequest:
    """The request for the next model call of `state` (a state folded with its spec)."""
    spec = state.spec
    if not isinstance(spec, AgentSpec):
        raise SpecError(f"run {state.run_id}: a model request needs the run's agent spec")
    return ModelRequest(
        run_id=state.run_id,
        model=spec.model,
        instructions=spec.system_prompt,
        messages=state.conversation.messages(),
        tools=tools,
        output_schema=spec.output_type,
    )


def finished_record(
    response: ModelResponse, seq: int, prices: PriceTable | None = None
) -> ModelCallFinished:
    """The `ModelCallFinished` body for `response`, written at `seq`: calls named ``seq.i``.

    With `prices` (the app's override), a call the provider did not price itself is priced
    from them when they know the model that served.
    """
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
        cost=_override(response, prices),
        finish_reason=response.finish_reason,
    )


def _override(response: ModelResponse, prices: PriceTable | None) -> Cost | None:
    cost = response.cost
    if prices is None or response.usage is None or (cost is not None and cost.source == "provider"):
        return cost
    return prices.cost(response.model, response.usage) or cost


def failure_records(error: BaseException, model: str) -> list[ModelCallFailed]:
    """One `ModelCallFailed` per attempt that failed in a call that raised `error`.

    A `ModelError` that lists its `failures` gives one record each; any other error (or a
    `ModelError` without them) gives one record for `model`, the model that was asked.
    """
    if isinstance(error, ModelError) and error.failures:
        return [failure_record(failure) for failure in error.failures]
    return [failed_record(error, model)]


def failure_record(failure: ModelFailure) -> ModelCallFailed:
    """The `ModelCallFailed` body for one failed attempt."""
    return ModelCallFailed(
        model=failure.model,
        error=failure.reason,
        status=failure.status,
        retryable=failure.retryable,
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
