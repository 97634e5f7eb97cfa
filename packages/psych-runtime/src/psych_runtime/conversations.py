"""Conversations that last: threads of runs, steering queues, compaction, user memory, agent
skills loaded on demand, and live text.

A thread is a chain of runs: ``dispatch(..., continues=run_id)`` starts a run that carries the
conversation of the run it continues, and `thread` reads the whole chain back. `send` puts a
user message in a run's queue (steer, follow-up, or the next run of the thread).
`Compaction` (``AgentSpec.compaction``) summarises a conversation grown past a size the
provider measured. These are records in the log, folded like the rest.

What is not in the log says so: the facts a `LocalUserMemory` (or any ``UserMemory``) keeps
about an end user (``AgentSpec.memory``; the log records only which facts a model call was
given), and the words `stream_text` shows while the model writes them (through a
`LocalLiveChannel` or another ``LiveChannel``; the finished text is in the log).
``LOAD_SKILL_TOOL`` is the built-in tool that reads an on-demand ``Skill``.

    from psych_runtime.conversations import Compaction, send, stream_text, thread

    run_id = await dispatch(store, spec, "What does gold include?", continues=previous)
    await send(store, run_id, "In euros, please.", queue="steer")
    async for event in stream_text(store, run_id, live=channel):
        ...
"""

from psych_core import LOAD_SKILL_TOOL, Compaction, Thread, ThreadMessage
from psych_runtime import _claim
from psych_runtime._surface._stream_text import TextEvent, stream_text
from psych_runtime._surface._threads import send, thread
from psych_runtime.adapters import LocalLiveChannel, LocalUserMemory

__all__ = [
    # threads, queues and compaction
    "Compaction",
    "Thread",
    "ThreadMessage",
    "send",
    "thread",
    # user memory
    "LocalUserMemory",
    # agent skills
    "LOAD_SKILL_TOOL",
    # live text
    "LocalLiveChannel",
    "TextEvent",
    "stream_text",
]

_claim.claim_exports(__name__, globals(), __all__)
