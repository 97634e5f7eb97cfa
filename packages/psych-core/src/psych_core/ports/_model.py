"""The `ModelClient` port: one call to a language model."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeGuard, runtime_checkable

from pydantic import JsonValue

from psych_core._messages import Message
from psych_core._model_failure import ModelFailure
from psych_core._quick_init import quick_init
from psych_core._spec import ModelRef
from psych_core._usage import Cost, Usage, UsageSource


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model is offered it: name, description and a JSON schema of arguments."""

    name: str
    description: str
    parameters: dict[str, JsonValue]


@quick_init
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


@quick_init
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


@quick_init
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


type TextSink = Callable[[str, int], None]
"""``on_text(text, offset)``: a piece of the answer as the model streams it.

`offset` is how many characters of the answer came before `text`; a client that starts the
answer over (a retry after a broken stream, a fallback model) starts again at offset 0, and
what it sent before is void. Called on the event loop, and must return at once.
"""


@runtime_checkable
class TextStreamingModel(Protocol):
    """A `ModelClient` that can also hand out its answer's text while the model writes it.

    `complete` takes an optional keyword `on_text` (a `TextSink`) and, given one, calls it with
    each piece of the answer's text as it arrives, then returns the whole `ModelResponse`
    exactly as it would without it (the same text, tool calls, usage, cost and failures).
    Without `on_text` it behaves as a plain `ModelClient`. The runtime passes `on_text` only to
    a client whose `complete` accepts it (`streams_text`), so clients without it keep working.
    A callback that raises must not fail the call: the runtime's own never raises.
    """

    async def complete(
        self, request: ModelRequest, *, on_text: TextSink | None = None
    ) -> ModelResponse:
        """One model turn for `request`, streaming its text to `on_text`."""
        ...


def streams_text(client: object) -> TypeGuard[TextStreamingModel]:
    """Whether `client.complete` takes the keyword `on_text` (see `TextStreamingModel`)."""
    complete = getattr(client, "complete", None)
    if complete is None:
        return False
    try:
        parameters = inspect.signature(complete).parameters
    except (TypeError, ValueError):
        return False
    found = parameters.get("on_text")
    return found is not None and found.kind in (
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )
