"""What the tool-source crash tests share: worker processes in process groups of their own,
killed with SIGKILL or stopped with SIGTERM, and waiting for a run to end or a ledger to fill."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from psych_runtime import Scope
from psych_runtime.ports import RunRow, Store
from psych_runtime.records import Record

ROOT = Path(__file__).resolve().parents[2]


def start_worker(module: str, *args: str) -> subprocess.Popen[bytes]:
    """``python -m module args...``, leading a process group of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def kill_group(pgid: int) -> None:
    """SIGKILL to every process of the group (gone already is fine)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the worker drains and closes its connections); SIGKILL if it does not end."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.wait()
    kill_group(process.pid)  # anything it left in its group


async def begun(
    lines: Callable[[], list[list[str]]],
    kinds: Collection[str],
    process: subprocess.Popen[bytes],
    seconds: float = 30,
) -> list[list[str]]:
    """The ledger's lines once lines of every one of `kinds` are there."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = lines()
        if set(kinds) <= {line[0] for line in found}:
            return found
        assert process.poll() is None, f"the worker ended early with {process.returncode}"
        await asyncio.sleep(0.05)
    raise AssertionError(f"{sorted(kinds)} did not all begin within {seconds:g} s: {lines()}")


async def ended(
    store: Store,
    scope: Scope,
    run_id: str,
    process: subprocess.Popen[bytes],
    seconds: float = 60,
) -> RunRow:
    """The run's row once it has ended, while `process` serves it."""
    deadline = time.monotonic() + seconds
    while True:
        row = await store.get_run(scope.tenant, run_id)
        assert row is not None
        if row.status in ("completed", "failed", "cancelled"):
            return row
        assert process.poll() is None, f"the worker ended early with {process.returncode}"
        assert time.monotonic() < deadline, f"run still {row.status} after {seconds:g} s"
        await asyncio.sleep(0.1)


def about[T](records: Sequence[Record], kind: type[T], call_id: str) -> list[tuple[Record, T]]:
    """The records of `kind` about the call `call_id`, with their bodies."""
    return [
        (r, r.body)
        for r in records
        if isinstance(r.body, kind) and getattr(r.body, "call_id", None) == call_id
    ]
