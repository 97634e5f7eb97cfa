"""Live text from a model call: its pieces handed to the `LiveChannel`, never holding up the run.

Only when `Runtime.live` is set and the model client streams text (`streams_text`); otherwise
the model is called exactly as before. Nothing here writes to the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from psych_core import LiveChannel, LiveText, ModelClient, ModelRequest, ModelResponse, streams_text
from psych_runtime.model.egress import Redactor

log = logging.getLogger("psych_runtime.live")

PUBLISH_TIMEOUT = 1.0
"""Seconds one `LiveChannel.publish` may take, and `close` may wait for the last ones."""

MAX_PENDING_CHARS = 256 * 1024
"""Characters a call's feed holds while its channel is busy; pieces past it are dropped."""


@dataclass
class _Pending:
    offset: int
    parts: list[str] = field(default_factory=list)
    chars: int = 0


class LiveFeed:
    """The pieces of one model call's answer, published in order by a task of their own.

    `on_text` (the `TextSink` the model client is given) only queues and returns. Known
    secret values are redacted first, as they are from every record: the text is held back
    where a secret may be beginning (`Redactor.settled`) until more text, or the end of the
    answer, says; the offsets published count the redacted text. The sender publishes what
    queued, joining pieces that follow each other into one, so a slow channel gets fewer,
    longer pieces instead of a growing queue. Each publish is bounded by `timeout`;
    one that raises or times out is counted, logged, and ends publishing for this call (its
    final text lands in the log all the same). Past `max_pending` characters waiting, pieces
    are dropped and counted: the next piece's offset then shows subscribers the gap.

    Attributes:
        sent: pieces published.
        dropped: pieces dropped (a full buffer, or after a failure).
        failures: publishes that raised or timed out.
    """

    def __init__(
        self,
        channel: LiveChannel,
        run_id: str,
        attempt: int,
        seq: int,
        *,
        redactor: Redactor | None = None,
        timeout: float = PUBLISH_TIMEOUT,
        max_pending: int = MAX_PENDING_CHARS,
    ) -> None:
        self._channel = channel
        self._redactor = redactor or Redactor()
        self._raw = ""  # the answer so far, as the model wrote it
        self._settled = 0  # how much of it is redacted and queued
        self._out = 0  # how much redacted text that made
        self._run_id = run_id
        self._attempt = attempt
        self._seq = seq
        self._timeout = timeout
        self._max_pending = max_pending
        self._pending: list[_Pending] = []
        self._pending_chars = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._broken = False
        self._closed = False
        self.sent = 0
        self.dropped = 0
        self.failures = 0

    def on_text(self, text: str, offset: int) -> None:
        """Take a piece of the answer; never raises, never waits.

        An `offset` of 0 after text came starts the answer over; other offsets are taken to
        follow on (a model client sends its pieces in order)."""
        try:
            if self._closed or not text:
                return
            if offset == 0 and self._raw:
                self._raw, self._settled, self._out = "", 0, 0
            self._raw += text
            self._advance(final=False)
        except Exception:  # a sink that raised would fail the model call: it must not
            log.exception("run %s, seq %s: live text not queued", self._run_id, self._seq)

    def _advance(self, *, final: bool) -> None:
        end = len(self._raw) if final else self._redactor.settled(self._raw, self._settled)
        if end <= self._settled:
            return
        redacted = self._redactor.text(self._raw[self._settled : end])
        self._settled = end
        self._queue(redacted, self._out)
        self._out += len(redacted)

    def _queue(self, text: str, offset: int) -> None:
        if not text:
            return
        if self._broken or self._pending_chars + len(text) > self._max_pending:
            self.dropped += 1
            return
        last = self._pending[-1] if self._pending else None
        if last is not None and offset == last.offset + last.chars:
            last.parts.append(text)
            last.chars += len(text)
        else:
            self._pending.append(_Pending(offset, [text], len(text)))
        self._pending_chars += len(text)
        if self._task is None:
            self._task = asyncio.create_task(self._send(), name=f"psych-live-{self._run_id}")
        self._wake.set()

    async def close(self) -> None:
        """The answer is whole: queue what was held back, let the sender publish what is
        queued for at most `timeout` seconds, then stop it."""
        with contextlib.suppress(Exception):
            if not self._closed:
                self._advance(final=True)
        self._closed = True
        self._wake.set()
        task = self._task
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=self._timeout)
        if not done:
            self.abort()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def abort(self) -> None:
        """Stop at once: what is queued is dropped."""
        self._closed = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _send(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                batch, self._pending = self._pending, []
                self._pending_chars = 0
                for index, pending in enumerate(batch):
                    piece = LiveText(
                        run_id=self._run_id,
                        attempt=self._attempt,
                        seq=self._seq,
                        offset=pending.offset,
                        text="".join(pending.parts),
                    )
                    if not await self._publish(piece):
                        self.dropped += len(batch) - index - 1 + len(self._pending)
                        self._pending = []
                        return
            if self._closed:
                return

    async def _publish(self, piece: LiveText) -> bool:
        try:
            async with asyncio.timeout(self._timeout):
                await self._channel.publish(piece)
        except Exception as exc:  # best effort: the run never fails for its live channel
            self._broken = True
            self.failures += 1
            self.dropped += 1
            log.warning(
                "run %s, attempt %s, seq %s: live text stopped for this model call: %s "
                "published %s piece(s), then %s: %s (the answer is in the log as usual)",
                self._run_id,
                self._attempt,
                self._seq,
                type(self._channel).__name__,
                self.sent,
                type(exc).__name__,
                exc,
            )
            return False
        self.sent += 1
        return True


async def complete_live(
    model: ModelClient,
    request: ModelRequest,
    live: LiveChannel | None,
    *,
    attempt: int,
    seq: int,
    redactor: Redactor | None = None,
) -> ModelResponse:
    """``model.complete(request)``, streaming the answer's text to `live` when both can.

    `seq` is the run's next seq (everything before it committed): the append that records
    this call starts there, so subscribers know the call's pieces are superseded once the log
    reaches it. Without `live`, or with a client whose `complete` takes no `on_text`, this is
    the plain call. `redactor`: the attempt's, so live text hides the secrets the log does.
    """
    if live is None or not streams_text(model):
        return await model.complete(request)
    feed = LiveFeed(live, request.run_id, attempt, seq, redactor=redactor)
    try:
        response = await model.complete(request, on_text=feed.on_text)
    except BaseException:
        feed.abort()
        raise
    await feed.close()
    return response
