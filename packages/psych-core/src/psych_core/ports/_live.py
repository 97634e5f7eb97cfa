"""The `LiveChannel` port: a model's words as it streams them, beside the log, never in it.

A run's log holds each model call's whole answer (`ModelCallFinished.text`) once the call is
over. A live channel carries the pieces of that answer while the model is still writing it, so
a chat screen can show them at once. It is best effort by design: a piece that is lost, late or
never sent costs nothing, since the finished text lands in the log and supersedes the pieces.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from psych_core.ports._closing import Closing


@dataclass(frozen=True, slots=True)
class LiveText:
    """One piece of a model call's answer, as the model streamed it.

    The pieces of one call share (`run_id`, `attempt`, `seq`); the call's answer is recorded
    later by an append that starts at `seq` (its `ModelCallFinished` is at `seq` or just after:
    records of the same append, such as `ModelCallFailed` for failed tries, may come first).
    So once the log holds a record at `seq` or later, the call is over and its pieces are
    superseded by what the log says.

    Attributes:
        run_id: the run the call serves.
        attempt: the attempt that made the call; a later attempt's call at the same `seq`
            supersedes this one's pieces.
        seq: the seq the append that records the call starts at (the run's next seq when the
            call was made, all earlier records committed).
        offset: how many characters of this answer came before `text`. The pieces of one
            answer follow each other without gaps (``offset`` of one is ``offset + len(text)``
            of the one before); an offset of 0 after text was sent means the model started the
            answer over (a retry or a fallback model), and the text before is void.
        text: the piece itself.
    """

    run_id: str
    attempt: int
    seq: int
    offset: int
    text: str


@runtime_checkable
class LiveChannel(Closing, Protocol):
    """Carries `LiveText` from the process calling the model to the processes following the run.

    `publish` is best effort: it may drop a piece (a full buffer, a broken connection) but
    must keep pieces of one run in the order published, and it should not raise; the runtime
    bounds it in time all the same and counts and logs what it raises, and a run never fails
    or waits long for its live channel. Nothing published is ever written to a run's log.

    `subscribe(run_id)` is an async context manager: once entered, every piece published for
    `run_id` from then on (and not dropped) is yielded by the iterator it gives, in publish
    order, until the block is left. Pieces published before it was entered are not
    replayed: a subscriber that joins late reads the finished text from the log instead.

    A channel may deliver a piece as several pieces that follow each other (same run, attempt
    and seq, contiguous offsets), as one with a payload limit must, and may drop empty pieces.

    The channel knows nothing of tenants: it is a deployment's plumbing, like the store. Apps
    reach it through `stream_text`, which checks that the caller's scoped store may read the
    run before it subscribes.

    `close` (and ``async with``, from `Closing`) releases its connections.

    Certified by `psych_runtime.testing.live_contract.LiveChannelContract`.
    """

    async def publish(self, text: LiveText) -> None:
        """Send `text` to the run's subscribers, if there are any; best effort."""
        ...

    def subscribe(self, run_id: str) -> AbstractAsyncContextManager[AsyncIterator[LiveText]]:
        """``async with channel.subscribe(run_id) as pieces: async for piece in pieces: ...``"""
        ...
