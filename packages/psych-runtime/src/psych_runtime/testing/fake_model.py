"""`FakeModel`: a scripted `ModelClient` for tests and offline examples."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from psych_core import (
    Cost,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    TextSink,
    Usage,
)

ScriptedCall = tuple[str, Mapping[str, Any] | str]
"""``(tool name, arguments)``; arguments as a mapping, or as raw text to test bad JSON."""


class FakeModel:
    """A model that answers from a script, one `turn` per call, in order.

    ``FakeModel().turn(text="Checking.", tool_calls=[("lookup", {"id": "A1"})]).turn(text="Done.")``

    Usage is what the turn scripts (zero by default), reported with source ``provider``; cost
    is None (no price is known for a fake model) unless the turn scripts one. Every request is
    kept in `requests`, so tests can check what the model was shown.

    It streams like a real client (a `TextStreamingModel`): given ``on_text``, `complete`
    hands out a turn's text in pieces (word by word, or the turn's `pieces`), letting other
    tasks run between them, then returns the whole answer as usual.
    """

    def __init__(self) -> None:
        self._turns: list[ModelResponse | BaseException] = []
        self._pieces: list[tuple[str, ...]] = []
        self._served = 0
        self.requests: list[ModelRequest] = []

    def turn(
        self,
        text: str | None = None,
        tool_calls: Iterable[ScriptedCall] = (),
        *,
        usage: Usage | None = None,
        cost: Cost | None = None,
        finish_reason: str | None = None,
        pieces: Iterable[str] | None = None,
    ) -> FakeModel:
        """Script the next answer; returns the model so calls chain.

        `pieces` are how `text` is streamed to an ``on_text`` callback (they must join to
        `text`); word by word when omitted.
        """
        streamed = tuple(pieces) if pieces is not None else _words(text or "")
        if "".join(streamed) != (text or ""):
            raise ValueError(f"the pieces {streamed!r} do not join to the text {text!r}")
        self._pieces.append(streamed)
        calls = tuple(
            ModelToolCall(
                name=name,
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
                provider_call_id=f"fake_call_{len(self._turns)}_{index}",
            )
            for index, (name, arguments) in enumerate(tool_calls)
        )
        self._turns.append(
            ModelResponse(
                model="",
                text=text,
                tool_calls=calls,
                usage=usage or Usage(),
                usage_source="provider",
                cost=cost,
                finish_reason=finish_reason or ("tool_calls" if calls else "stop"),
            )
        )
        return self

    def fail(self, error: BaseException) -> FakeModel:
        """Script the next call to raise `error`; returns the model so calls chain."""
        self._turns.append(error)
        self._pieces.append(())
        return self

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been served."""
        return len(self._turns) - self._served

    async def complete(
        self, request: ModelRequest, *, on_text: TextSink | None = None
    ) -> ModelResponse:
        """Serve the next scripted turn as if `request.model` answered it, streaming its text
        to `on_text` when given."""
        self.requests.append(request)
        if self._served >= len(self._turns):
            raise ModelError(
                f"run {request.run_id}: FakeModel has no scripted turn left "
                f"({len(self._turns)} scripted, all served); add another .turn(...)",
                model=request.model.model,
            )
        scripted = self._turns[self._served]
        pieces = self._pieces[self._served]
        self._served += 1
        if isinstance(scripted, BaseException):
            raise scripted
        if on_text is not None:
            offset = 0
            for piece in pieces:
                on_text(piece, offset)
                offset += len(piece)
                await asyncio.sleep(0)  # as a network would: others run between pieces
        return ModelResponse(
            model=request.model.model,
            text=scripted.text,
            tool_calls=scripted.tool_calls,
            usage=scripted.usage,
            usage_source=scripted.usage_source,
            cost=scripted.cost,
            finish_reason=scripted.finish_reason,
        )


def _words(text: str) -> tuple[str, ...]:
    """`text` in pieces of one word each, with the spaces after it."""
    return tuple(re.findall(r"\S+\s*|\s+", text))
