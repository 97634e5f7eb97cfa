"""Reading a program's output up to a cap, and feeding its input, while it runs."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final, Literal

from psych_core import ExecRequest, ExecTally, LimitName

_CHUNK: Final = 65536
"""How much one read takes from a pipe."""


async def read_capped(
    stream: asyncio.StreamReader,
    tally: ExecTally,
    which: Literal["stdout", "stderr"],
    cap: int,
    overflow: asyncio.Event,
) -> None:
    """Read `stream` to its end into `tally`'s `which` output, keeping at most `cap` bytes.

    The first read past the cap marks the output truncated and the ``output`` limit hit
    (`ExecTally.keep`) and sets `overflow`, for the caller to stop the program. What comes
    after is read and dropped, so the program never blocks on a full pipe before it is stopped.
    """
    while chunk := await stream.read(_CHUNK):
        if not tally.keep(which, chunk, cap):
            overflow.set()


class ProgramStreams:
    """A running process's stdin fed and its stdout and stderr read into a tally, capped.

    Use it as ``async with ProgramStreams(process, tally, request) as streams`` around the
    run; the reading and feeding start on entering. Call `drain` once the program is done, to
    keep what it wrote last; leaving the block cancels whatever still runs (the process's pipes
    stay the process's to close).

    Args:
        process: a process started with ``stdin``, ``stdout`` and ``stderr`` pipes.
        tally: where the output goes.
        request: what is run: its ``stdin`` is written to the program's stdin, which is then
            closed, and at most ``limits.output_bytes`` are kept of stdout, and of stderr.
    """

    def __init__(
        self, process: asyncio.subprocess.Process, tally: ExecTally, request: ExecRequest
    ) -> None:
        if process.stdin is None or process.stdout is None or process.stderr is None:
            raise ValueError("ProgramStreams needs a process started with all three pipes")
        self.overflow = asyncio.Event()
        """Set when an output passed its cap: stop the program."""
        self._pipes = (process.stdin, process.stdout, process.stderr)
        self._tally = tally
        self._stdin = request.stdin
        self._cap = request.limits.output_bytes
        self._readers: list[asyncio.Task[None]] = []
        self._feeder: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ProgramStreams:
        stdin, stdout, stderr = self._pipes
        self._readers = [
            asyncio.create_task(
                read_capped(stdout, self._tally, "stdout", self._cap, self.overflow)
            ),
            asyncio.create_task(
                read_capped(stderr, self._tally, "stderr", self._cap, self.overflow)
            ),
        ]
        self._feeder = asyncio.create_task(_feed(stdin, self._stdin))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._cancel(self._tasks())

    async def wait(self, ended: asyncio.Future[Any], seconds: float) -> LimitName | None:
        """Wait until `ended` is done, `seconds` have passed, or an output passed its cap.

        Returns:
            None when `ended` came first; otherwise the limit that did (``wall_time`` or
            ``output``), and the caller stops the program. `ended` is never cancelled here.
        """
        stopper = asyncio.create_task(self.overflow.wait())
        try:
            done, _ = await asyncio.wait(
                {ended, stopper}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopper.cancel()
        if ended in done:
            return None
        return "output" if stopper in done else "wall_time"

    async def drain(self, grace: float) -> None:
        """Read on for up to `grace` seconds until stdout and stderr end (every process holding
        them is gone), keep what came, then stop reading and feeding."""
        _, pending = await asyncio.wait(self._readers, timeout=grace)
        await self._cancel([*pending, *self._tasks()])

    def _tasks(self) -> list[asyncio.Task[None]]:
        return [*self._readers, *([self._feeder] if self._feeder is not None else [])]

    @staticmethod
    async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    # A program that exits without reading its input is not an error.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if data:
            stdin.write(data)
            await stdin.drain()
        stdin.close()
        await stdin.wait_closed()
