"""Starting a sandbox's supervisor in a process group of its own, talking to it, killing it.

A backend runs a small stdlib-only script (its own supervisor, or `PREPARE_SCRIPT`) with
`Supervisor`: in a new session, so that the script and everything it starts form one process
group that one signal kills; with two pipes besides stdin, stdout and stderr: the *status* pipe,
on which the script reports JSON lines (what it set up, how the program ended), and the *go*
pipe, on which the parent answers whether the program may start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final, overload

from psych_core import ExecRequest, ExecTally, SandboxUnavailable

PREPARE_SCRIPT: Final = Path(__file__).with_name("_prepare.py")
"""The script that prepares a program's process and execs the program (see its docstring):
joins cgroups, sets rlimits, switches user, reports on the status pipe, waits for ``g``."""


def python_command(python: str, script: str | os.PathLike[str]) -> list[str]:
    """How `python` runs a stdlib-only `script`: isolated (``-I``: the ``PYTHON*`` variables of
    a request's environment and the user's site cannot change what runs), without
    site-packages (``-S``) and writing no bytecode (``-B``). Append the script's arguments."""
    return [python, "-I", "-S", "-B", os.fspath(script)]


class Supervisor:
    """One execution's supervisor process, in a session (so a process group) of its own.

    Use it as ``async with Supervisor(backend, python=...) as supervisor``: entering makes the
    status and go pipes (`status_fd` is the number the script will report on, for a program
    that is told to report there too), `start` runs the script, and leaving the block releases
    everything, however it ends: both pipes are closed, and a supervisor that has not exited is
    killed with its whole process group (SIGKILL) and reaped. The caller closes no descriptor
    and reaps no process itself.

    Args:
        backend: the sandbox's name, for the errors.
        python: the interpreter that runs the script.
    """

    def __init__(self, backend: str, *, python: str) -> None:
        self._backend = backend
        self._python = python
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._status_file: BinaryIO | None = None
        self._open: set[int] = set()
        self.status_fd = -1
        """The status pipe's write end, by the number the script inherits it under (to pass
        on to a program that reports there too); this process's copy closes in `start`."""
        self._status_r = self._go_r = self._go_w = -1

    async def __aenter__(self) -> Supervisor:
        self._status_r, self.status_fd = os.pipe()
        self._go_r, self._go_w = os.pipe()
        self._open = {self._status_r, self.status_fd, self._go_r, self._go_w}
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._transport is not None:
            self._transport.close()  # and the file it reads, the status pipe's read end
        elif self._status_file is not None:
            self._status_file.close()
        for fd in self._open:
            os.close(fd)
        self._open.clear()
        process = self._process
        if process is not None and process.returncode is None:
            self.kill()
            await process.wait()

    @property
    def process(self) -> asyncio.subprocess.Process:
        """The running supervisor (its stdin, stdout and stderr are pipes)."""
        if self._process is None:
            raise RuntimeError("Supervisor.process is there only once start() has run")
        return self._process

    async def start(
        self,
        script: str | os.PathLike[str],
        config: Mapping[str, Any],
        *,
        cwd: str,
        env: Mapping[str, str],
        pass_fds: Iterable[int] = (),
    ) -> None:
        """Run `script` with `config` (JSON, as its one argument, with ``status_fd`` and
        ``go_fd`` added) in a new session, in `cwd`, with exactly `env`.

        The script inherits the status pipe's write end, the go pipe's read end and `pass_fds`;
        this process closes its copies of all of them here, whether or not the start worked.

        Raises:
            SandboxUnavailable: the interpreter could not be started (what to fix is in it).
        """
        extra = tuple(pass_fds)
        self._open.update(extra)
        handed = (self.status_fd, self._go_r, *extra)
        argument = json.dumps({**config, "status_fd": self.status_fd, "go_fd": self._go_r})
        try:
            self._process = await asyncio.create_subprocess_exec(
                *python_command(self._python, script),
                argument,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
                pass_fds=handed,
            )
        except OSError as exc:
            raise SandboxUnavailable(
                self._backend,
                f"could not start the supervisor with {self._python}: {exc} "
                "(pass python= the path of a working interpreter)",
            ) from exc
        finally:
            for fd in handed:
                os.close(fd)
                self._open.discard(fd)

    async def next_event(self, timeout: float | None) -> dict[str, Any] | None:
        """The next JSON line on the status pipe; None once the pipe has ended (every writer is
        gone) or after `timeout` seconds. A line that is not JSON comes as ``{"unparsed": ...}``."""
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=1 << 20)
            self._status_file = os.fdopen(self._status_r, "rb", buffering=0)
            self._open.discard(self._status_r)
            self._transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), self._status_file
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

    def answer(self, request: ExecRequest, tally: ExecTally) -> bool:
        """Tell the supervisor whether the program may start, and return that: only when every
        guarantee `request` requires is graded ``enforced`` in `tally` so far, since output
        produced under weaker terms would be withheld anyway (the `Sandbox` port's rule 3).

        Raises:
            SandboxUnavailable: the supervisor is gone already.
        """
        start = not tally.unmet(request)
        self._answer(b"g" if start else b"n")
        return start

    def _answer(self, byte: bytes) -> None:
        try:
            os.write(self._go_w, byte)
        except BrokenPipeError as exc:
            raise SandboxUnavailable(
                self._backend, "the supervisor exited before it was told whether to start"
            ) from exc

    def terminate(self) -> None:
        """Ask the supervisor alone to stop (SIGTERM), so that it can clean up and report."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)

    def kill(self) -> None:
        """Kill the supervisor's whole process group (SIGKILL): whatever did not leave it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    @overload
    async def wait(self) -> int: ...

    @overload
    async def wait(self, timeout: float) -> int | None: ...

    async def wait(self, timeout: float | None = None) -> int | None:
        """The supervisor's exit status once it has exited, or None after `timeout` seconds
        (by default, it waits as long as that takes)."""
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            return None
