"""The parent's side of one execution: the status pipe, output caps, stdin and the grades."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Final

from psych_core import Grade, Guarantee, LimitName

_CHUNK: Final = 65536


@dataclass
class Execution:
    """What one execution set up and saw, filled in as it goes."""

    grades: dict[Guarantee, Grade] = field(default_factory=dict)
    reasons: dict[Guarantee, str] = field(default_factory=dict)
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    limit_hit: LimitName | None = None
    exit_code: int | None = None
    signal: int | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def grade(self, guarantee: Guarantee, grade: Grade, reason: str | None = None) -> None:
        """Set one grade; a grade that is not ``enforced`` keeps its reason."""
        self.grades[guarantee] = grade
        if grade == "enforced":
            self.reasons.pop(guarantee, None)
        elif reason:
            self.reasons[guarantee] = reason

    async def read_output(self, stream: asyncio.StreamReader, which: str, cap: int) -> None:
        """Keep at most `cap` bytes of `stream`; past the cap, mark it and ask for a stop."""
        buffer = self.stdout if which == "stdout" else self.stderr
        while chunk := await stream.read(_CHUNK):
            room = cap - len(buffer)
            if len(chunk) > room:
                buffer.extend(chunk[: max(room, 0)])
                if which == "stdout":
                    self.stdout_truncated = True
                else:
                    self.stderr_truncated = True
                if self.limit_hit is None:
                    self.limit_hit = "output"
                self.stop.set()
            else:
                buffer.extend(chunk)


async def feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """Write `data` to the program's stdin and close it; a program that stops reading is fine."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if data:
            stdin.write(data)
            await stdin.drain()
        stdin.close()
        await stdin.wait_closed()


class StatusReader:
    """Reads JSON lines from the status pipe without blocking the event loop."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "rb", buffering=0)
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.BaseTransport | None = None

    async def next_event(self, timeout: float | None) -> dict[str, Any] | None:
        """The next JSON object, or None at end of pipe or on timeout."""
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=1 << 20)
            self._transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), self._file
            )
            self._reader = reader
        try:
            line = await asyncio.wait_for(self._reader.readline(), timeout)
        except TimeoutError:
            return None
        if not line:
            return None
        try:
            event: dict[str, Any] = json.loads(line)
        except ValueError:
            return {"unparsed": line.decode("utf-8", "replace")}
        return event

    def close(self) -> None:
        """Close the pipe."""
        if self._transport is not None:
            self._transport.close()
        else:
            self._file.close()
