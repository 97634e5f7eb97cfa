"""A scripted model that answers from the conversation alone: any process, and any of many
concurrent runs, can serve any turn of a run (a `FakeModel` answers in the order it is asked)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from psych_runtime import Usage
from psych_runtime.ports import AssistantMessage, ModelRequest, ModelResponse, ModelToolCall

Calls = Sequence[tuple[str, Mapping[str, object]]]


class ByTurn:
    """Turn n makes the calls `turns[n]`; once the script has run out it answers `text`."""

    def __init__(self, turns: Sequence[Calls], text: str = "done") -> None:
        self.turns = [list(calls) for calls in turns]
        self.text = text

    async def complete(self, request: ModelRequest) -> ModelResponse:
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        script = self.turns[turn] if turn < len(self.turns) else []
        calls = tuple(
            ModelToolCall(name=name, arguments=json.dumps(arguments)) for name, arguments in script
        )
        return ModelResponse(
            model="scripted",
            text=None if calls else self.text,
            tool_calls=calls,
            usage=Usage(),
            usage_source="provider",
        )
