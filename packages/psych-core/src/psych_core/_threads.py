"""Threads: a chain of runs, each continuing the one before, read as one conversation.

A continuation carries what its predecessor's next model request would have been built from
(`carried_history`), so no run ever reads the chain to fold; reading the whole thread back
(`thread_messages`) takes each run's own messages, after what it carried.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from psych_core._messages import AssistantMessage, Message, ToolResultMessage
from psych_core._records import CarriedMessage
from psych_core._state import RunState


class ThreadMessage(BaseModel):
    """One message of a thread, and the run it belongs to."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    message: CarriedMessage


class Thread(BaseModel):
    """A whole thread: its runs, oldest first, and their messages in order.

    Attributes:
        run_ids: the chain, from the run that started the thread to the latest continuation.
        messages: every message of every run in order, as the log has them: a compacted
            run's summarised messages are here too (its report has the summary).
        next_run: user messages the latest run keeps for the run that will continue it: those
            sent with ``queue="next_run"``, and, once it has ended, any steer or follow-up it
            never gave its model (it was cancelled or failed with them waiting).
    """

    model_config = ConfigDict(frozen=True)

    run_ids: tuple[str, ...]
    messages: tuple[ThreadMessage, ...]
    next_run: tuple[str, ...] = ()


def carried_history(state: RunState) -> tuple[Message, ...]:
    """What a continuation of the run folded in `state` carries: the messages its next model
    request would be built from, cut after the last point where every tool call has its
    result (a run that ended with calls open drops that unanswered tail)."""
    messages = state.request_messages()
    open_ids: set[str] = set()
    closed = 0
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            open_ids.update(call.call_id for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage):
            open_ids.discard(message.call_id)
        if not open_ids:
            closed = index + 1
    return messages[:closed]


def own_messages(state: RunState) -> tuple[ThreadMessage, ...]:
    """The messages of the run folded in `state` after what it carried from its predecessor."""
    # A continuation's conversation opens with what it carried (`RunAdmitted.history`); its
    # own messages start with those its predecessor kept for it (`queued`).
    carried = len(state.admitted.history) if state.admitted is not None else 0
    messages = state.conversation.messages()[carried:]
    return tuple(ThreadMessage(run_id=state.run_id, message=message) for message in messages)
