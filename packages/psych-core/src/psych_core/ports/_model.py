"""The `ModelClient` port: one call to a language model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import JsonValue

from psych_core._messages import Message
from psych_core._model_failure import ModelFailure
from psych_core._spec import ModelRef
from psych_core._usage import Cost, Usage, UsageSource


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model is offered it: name, description and a JSON schema of arguments."""

    name: str
    description: str
    parameters: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs.

    Attributes:
        run_id: the run the call serves, for logs and telemetry.
        model: the model and its settings.
        instructions: the system prompt.
        messages: the conversation, oldest first.
        tools: the tools offered for this call (resolved again before every call).
        output_schema: a JSON schema the answer must satisfy, or None for text.
    """

    run_id: str
    model: ModelRef
    instructions: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    output_schema: dict[str, JsonValue] | None = None


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """A tool call as the model wrote it; the runtime names it ``"{seq}.{i}"`` when recorded.

    Attributes:
        arguments: the raw JSON text of the arguments, which may not parse.
        provider_call_id: the provider's id for the call, possibly empty or repeated.
    """

    name: str
    arguments: str
    provider_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """The model's answer.

    Attributes:
        model: the model that actually served (a fallback, perhaps).
        usage: tokens used, or None when the provider did not say.
        usage_source: ``provider``, ``estimated`` or ``missing``; never a made-up zero.
        cost: what the call cost, or None when no price is known (never zero for unknown).
        failures: the attempts that failed before this one served, oldest first (retries of
            the same model, then the models tried before the fallback that served).
    """

    model: str
    text: str | None = None
    tool_calls: tuple[ModelToolCall, ...] = field(default_factory=tuple)
    usage: Usage | None = None
    usage_source: UsageSource = "missing"
    cost: Cost | None = None
    finish_reason: str | None = None
    failures: tuple[ModelFailure, ...] = ()


@runtime_checkable
class ModelClient(Protocol):
    """Calls a language model once.

    `complete` returns the model's whole turn. It retries what is worth retrying itself and
    raises `ModelError` when no answer can be had; the runtime records the failure. It must not
    write to the log or keep per-run state: the same request may be sent again after a crash.

    Every attempt that failed is reported, so the log can name it: in
    `ModelResponse.failures` when a later attempt served, in `ModelError.failures` when none
    did. The runtime writes one `ModelCallFailed` per failure, then the `ModelCallFinished`
    (or the run's failure), in one append. Failure reasons must not contain secret values.
    """

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """One model turn for `request`."""
        ...
