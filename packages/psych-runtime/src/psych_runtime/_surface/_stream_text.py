"""`stream_text()`: the assistant's words for a chat screen, from the log, with live text beside.

The log is the truth: every assistant message is a `ModelCallFinished` with text, and those
are yielded as ``final`` events in seq order. A `LiveChannel` adds ``delta`` events, the words
of the model call in progress as the model writes them; they are never in the log, and the
call's record supersedes them when it lands. So a client that reconnects (``after=``) loses
only deltas, never text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Literal

from psych_core import LiveChannel, LiveText, ModelCallFinished, Record, RunState, ScopedStore, fold
from psych_runtime.runtime import authorize

log = logging.getLogger("psych_runtime.live")

type TextEventKind = Literal["delta", "final", "discard"]


@dataclass(frozen=True, slots=True)
class TextEvent:
    """One thing a chat screen does with the assistant's words; see `stream_text`.

    Attributes:
        kind: ``final`` (a whole assistant message from the log), ``delta`` (more words of
            the message being written, not in the log) or ``discard`` (drop the words shown
            so far for the message being written).
        run_id: the run.
        seq: for ``final``, the seq of the `ModelCallFinished` that holds the message (pass
            it as ``after=`` to resume); for ``delta`` and ``discard``, the seq the model
            call's record will be written at or after (not in the log yet: never pass it as
            ``after=``).
        text: the whole message (``final``), the words to add (``delta``), or ``""``.
    """

    kind: TextEventKind
    run_id: str
    seq: int
    text: str


async def stream_text(
    store: ScopedStore,
    run_id: str,
    *,
    after: int = -1,
    live: LiveChannel | None = None,
    poll: float = 1.0,
) -> AsyncIterator[TextEvent]:
    """Yield the assistant's words in run `run_id`, from its log and, given `live`, as the
    model writes them, until the run ends.

    Every assistant message with text (`ModelCallFinished.text`, in seq order; a turn that only
    calls tools says nothing) is one ``final`` event, after `after`. With a `live` channel (the
    same one the workers' `Runtime.live` publishes to), the words of the model call in
    progress come first as ``delta`` events. Render them with one provisional bubble:

    - ``delta``: add `text` to the provisional bubble (start one if there is none);
    - ``final``: remove the provisional bubble, and add `text` as a message for good;
    - ``discard``: remove the provisional bubble (the model started the answer over, the
      call failed or said nothing, or words went missing on the way: the log's text follows).

    To resume after a reconnect, pass the `seq` of the last ``final`` you rendered as `after`:
    nothing of the log's text is lost or repeated. Deltas are not replayed: a subscriber that
    joins while a message is being written shows it when its ``final`` comes.

    Like `stream`, it takes a scoped store: `RunNotFound` outside the store's tenant (checked
    before anything is subscribed, so another tenant's live text is never seen), and
    `PolicyDenied` when its policy does not allow ``read``. Waits on the store between records
    (`Store.wait`, polling at most every `poll` seconds where it cannot be woken).
    """
    authorize(store, "read", run_id, function="stream_text")
    await store.run(run_id)  # RunNotFound for another tenant's run, before subscribing
    if live is None:
        async with contextlib.aclosing(_follow(store, run_id, after, None, poll)) as events:
            async for event in events:
                yield event
        return
    # The follower is closed (its pump of the subscription cancelled) before the subscription
    # is left, whichever way the reader stops.
    async with (
        live.subscribe(run_id) as pieces,
        contextlib.aclosing(_follow(store, run_id, after, pieces, poll)) as events,
    ):
        async for event in events:
            yield event


async def _follow(
    store: ScopedStore,
    run_id: str,
    after: int,
    pieces: AsyncIterator[LiveText] | None,
    poll: float,
) -> AsyncGenerator[TextEvent]:
    state = RunState.empty(run_id)
    draft = Provisional(run_id)
    # Bounded: a reader that falls behind leaves pieces in the channel's own buffer, which
    # drops them when full (a gap the offsets show), rather than in memory here.
    queue: asyncio.Queue[LiveText] = asyncio.Queue(64)
    pump = asyncio.create_task(_pump(pieces, queue, run_id)) if pieces is not None else None
    waiter: asyncio.Task[None] | None = None
    getter: asyncio.Task[LiveText] | None = None
    try:
        records = await store.read(run_id)
        while True:
            for record in records:
                state = fold(state, record)
                for event in draft.record(record, after):
                    yield event
            for event in draft.caught_up(state.last_seq):
                yield event
            if state.ended:
                for event in draft.end():
                    yield event
                return
            waiter = asyncio.create_task(store.wait(run_id, state.last_seq, poll))
            while True:
                if pump is not None and getter is None:
                    getter = asyncio.create_task(queue.get())
                waiting = {waiter} if getter is None else {waiter, getter}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if getter is not None and getter.done():
                    piece, getter = getter.result(), None
                    for event in draft.piece(piece, state.last_seq):
                        yield event
                if waiter.done():
                    waiter.result()
                    waiter = None
                    break
            records = await store.read(run_id, state.last_seq)
    finally:
        for task in (waiter, getter, pump):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


async def _pump(
    pieces: AsyncIterator[LiveText], queue: asyncio.Queue[LiveText], run_id: str
) -> None:
    try:
        async for piece in pieces:
            await queue.put(piece)
    except Exception as exc:  # live text is best effort: the log goes on being followed
        log.warning(
            "run %s: live text stopped (%s: %s); following the log", run_id, type(exc).__name__, exc
        )


class Provisional:
    """The words shown for the model call in progress, and what each piece or record does
    to them: the rules `stream_text` renders by, with no IO."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.key: tuple[int, int] | None = None  # (seq, attempt) of the call shown
        self.shown = 0  # characters of it shown
        self.lost = False  # a gap in its pieces: show no more of it

    def piece(self, piece: LiveText, log_seq: int) -> list[TextEvent]:
        """Events for a live piece, the log having been read up to `log_seq`."""
        if piece.seq <= log_seq:
            return []  # its call is recorded: the log's text has superseded it
        key = (piece.seq, piece.attempt)
        events: list[TextEvent] = []
        if self.key is not None and key < self.key:
            return []  # a call an earlier attempt made, superseded
        if self.key is None or key > self.key or piece.offset == 0:
            # A new call, or a new answer to this one (a retry or a fallback model).
            events += self._clear()
            self.key = key
        if self.lost:
            return events
        if piece.offset != self.shown:
            # Joined late, or a piece went missing: the log's text will say it whole.
            events += self._clear()
            self.key, self.lost = key, True
            return events
        if piece.text:
            self.shown += len(piece.text)
            events.append(TextEvent("delta", self.run_id, piece.seq, piece.text))
        return events

    def record(self, record: Record, after: int) -> list[TextEvent]:
        """Events for a record of the log, read in seq order; ``final`` only after `after`."""
        body = record.body
        if not isinstance(body, ModelCallFinished) or not body.text:
            return []
        ends_draft = self.key is not None and record.seq >= self.key[0]
        if record.seq <= after:
            return self._clear() if ends_draft else []
        if ends_draft:
            # The final replaces the provisional words: no discard needed.
            self.key, self.shown, self.lost = None, 0, False
        elif self.key is not None:
            # An earlier call's final, read after a later call began to stream: the screen
            # drops the provisional words with it, so the rest of them would miss their start.
            self.shown, self.lost = 0, True
        return [TextEvent("final", self.run_id, record.seq, body.text)]

    def caught_up(self, log_seq: int) -> list[TextEvent]:
        """Events once the log has been read up to `log_seq`: a call recorded without text
        (tools only, a failure) drops what was shown of it."""
        if self.key is not None and self.key[0] <= log_seq:
            return self._clear()
        return []

    def end(self) -> list[TextEvent]:
        """Events once the run has ended: no call is in progress any more."""
        return self._clear()

    def _clear(self) -> list[TextEvent]:
        seq = self.key[0] if self.key is not None else -1
        shown = self.shown
        self.key, self.shown, self.lost = None, 0, False
        return [TextEvent("discard", self.run_id, seq, "")] if shown else []
