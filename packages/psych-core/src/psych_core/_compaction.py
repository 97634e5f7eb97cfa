"""Compaction: when a conversation has grown past a size, summarise its older turns.

The policy is data in the spec (`psych_core.Compaction`). Whether to compact and where to cut
are pure functions of the folded state, so a crash changes neither: the size is the one the
provider reported for the last model call, never an estimate, and the cut is always at the
start of a user turn, where no tool call waits for its result.
"""

from __future__ import annotations

from psych_core._messages import Message, UserMessage

SUMMARY_INSTRUCTIONS = (
    "You summarise a conversation between a user and an AI assistant so the assistant can "
    "continue it without the full text. Keep every fact, decision, name, number, open question "
    "and commitment that later turns may need, the user's goals and preferences, and what the "
    "tools returned that still matters. Write plain prose or short bullet points, no preamble."
)
"""What the summarising model is told, unless ``Compaction.instructions`` says otherwise."""

SUMMARY_PREFIX = "Summary of the conversation so far (earlier messages were compacted):\n\n"
"""How the summary opens the messages the model is sent after a compaction."""


def cut_point(messages: tuple[Message, ...], start: int, keep_turns: int) -> int | None:
    """Where to cut `messages` so the last `keep_turns` user turns are kept: the index of the
    user message that opens the earliest kept turn, or None when nothing after `start` (the
    first message of the current view) would be summarised."""
    openings = [
        index for index in range(start, len(messages)) if isinstance(messages[index], UserMessage)
    ]
    if len(openings) <= keep_turns:
        return None
    cut = openings[-keep_turns]
    return cut if cut > start else None
