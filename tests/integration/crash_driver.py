"""The crash test's driver: runs worker processes and kills them, then checks the logs.

Used by the integration tests for every durable store (the URL says which).
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from psych_core import RunState, fold_all
from psych_runtime import Scope, dispatch
from psych_runtime.records import (
    AttemptStarted,
    Record,
    RunCompleted,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)
from psych_runtime.runtime import POINTS
from tests.integration._stores import open_store
from tests.integration.crash_worker import SPEC

ROOT = Path(__file__).resolve().parents[2]
SCOPE = Scope(tenant="crash")
# The points this scenario passes through (its tools never fail, so no tool_call_failed).
REACHABLE = tuple(point for point in POINTS if point != "after_commit:tool_call_failed")


@dataclass
class CrashOutcome:
    """What a crash run did, for the test to assert on."""

    run_ids: list[str]
    logs: dict[str, list[Record]]
    ledger: list[tuple[str, str, str]]  # (kind, idempotency key, pid)
    kills: int = 0
    fault_deaths: int = 0
    points_hit: set[str] = field(default_factory=set)


def _start(url: str, ledger: Path, fault: str | None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PSYCH_FAULTS", None)
    if fault:
        env["PSYCH_FAULTS"] = fault
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.crash_worker", url, str(ledger)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def crash_run(
    url: str,
    ledger: Path,
    *,
    runs: int = 200,
    workers: int = 2,
    min_kills: int = 50,
    deadline_s: float = 600,
    seed: int = 7,
) -> CrashOutcome:
    """Dispatch `runs`, keep `workers` processes alive while killing them, until all end."""
    rng = random.Random(seed)
    store = open_store(url)
    await store.migrate()
    scoped = store.scoped(SCOPE)
    run_ids = [await dispatch(scoped, SPEC, f"run {i}") for i in range(runs)]
    await asyncio.to_thread(ledger.touch)
    # Every named point is armed at least once, in turn; then a random mix.
    schedule = [f"{point}@{rng.randint(1, 3)}" for point in REACHABLE]
    outcome = CrashOutcome(run_ids=run_ids, logs={}, ledger=[])
    armed: dict[int, str | None] = {}

    def launch() -> subprocess.Popen[bytes]:
        missing = [point for point in REACHABLE if point not in outcome.points_hit]
        if schedule:
            fault: str | None = schedule.pop(0)
        elif missing and rng.random() < 0.7:
            fault = f"{rng.choice(missing)}@1"
        else:
            point = rng.choice((*REACHABLE, None, None))
            fault = f"{point}@{rng.randint(1, 8)}" if point else None
        process = _start(url, ledger, fault)
        armed[process.pid] = fault
        return process

    procs = [launch() for _ in range(workers)]
    started = time.monotonic()
    next_kill = started + rng.uniform(0.2, 1.0)
    next_look = started
    try:
        while True:
            if time.monotonic() - started > deadline_s:
                raise AssertionError(f"runs did not all end within {deadline_s} s")
            for index, process in enumerate(procs):
                code = process.poll()
                if code is not None:
                    if code == -signal.SIGKILL:
                        outcome.kills += 1
                        fault = armed.get(process.pid)
                        if fault:
                            outcome.fault_deaths += 1
                            outcome.points_hit.add(fault.split("@")[0])
                    procs[index] = launch()
            if time.monotonic() >= next_kill:
                victim = rng.choice(procs)
                victim.send_signal(signal.SIGKILL)
                armed[victim.pid] = None
                next_kill = time.monotonic() + rng.uniform(0.1, 0.8)
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + 0.5
                ended = 0
                for run_id in run_ids:
                    row = await store.get_run(SCOPE.tenant, run_id)
                    if row is not None and row.status in ("completed", "failed", "cancelled"):
                        ended += 1
                enough = outcome.kills >= min_kills and outcome.points_hit >= set(REACHABLE)
                if ended == len(run_ids) and enough:
                    break
                if ended == len(run_ids):
                    # All done before enough kills: admit more work to keep killing into.
                    for _ in range(10):
                        run_ids.append(await dispatch(scoped, SPEC, f"extra {len(run_ids)}"))
            await asyncio.sleep(0.05)
    finally:
        for process in procs:
            process.kill()
            process.wait()
    outcome.run_ids = run_ids
    outcome.logs = {run_id: await scoped.read(run_id) for run_id in run_ids}
    for line in (await asyncio.to_thread(ledger.read_text)).splitlines():
        kind, key, _label, _attempt, pid = line.split()
        outcome.ledger.append((kind, key, pid))
    return outcome


def check_outcome(outcome: CrashOutcome) -> None:
    """Everything the crash test promises, asserted."""
    effects = collections.Counter((kind, key) for kind, key, _ in outcome.ledger)
    for run_id, log in outcome.logs.items():
        # Folding checks there is no gap and no repeated seq, and that every record fits.
        state = fold_all(RunState.empty(run_id, SPEC), log)
        assert state.status == "completed", f"run {run_id} ended {state.status}: {state.error}"
        assert isinstance(log[-1].body, RunCompleted)
        assert [r.seq for r in log] == list(range(len(log)))
        started: dict[str, list[Record]] = collections.defaultdict(list)
        for record in log:
            body = record.body
            if isinstance(body, ToolCallStarted):
                started[body.call_id].append(record)
            elif isinstance(body, ToolCallSettled):
                # Only a call that started, on an attempt that then died, is settled unknown.
                starts = started[body.call_id]
                assert starts, f"run {run_id}: {body.call_id} settled unknown but never started"
                assert starts[-1].attempt < record.attempt, (
                    f"run {run_id}: {body.call_id} settled by the attempt that started it"
                )
                assert starts[-1].body.name == "unsafe_effect"  # type: ignore[union-attr]
            elif isinstance(body, ToolCallFinished):
                assert started[body.call_id], f"run {run_id}: {body.call_id} finished unstarted"
        for call_id, starts in started.items():
            name = starts[0].body.name  # type: ignore[union-attr]
            key = f"{run_id}:{call_id}"
            if name == "safe_effect":
                assert effects[("safe", key)] >= 1, f"safe call {key} never ran"
            else:
                assert len(starts) == 1, f"unsafe call {key} was started twice"
                assert effects[("unsafe", key)] <= 1, f"unsafe call {key} ran twice"
    for (kind, key), count in effects.items():
        if kind == "unsafe":
            assert count == 1, f"{key} ran {count} times"


def check_one_live_attempt(run_id: str, log: Sequence[Record]) -> None:
    """No run was written by two live attempts: attempt numbers only grow along the log, each
    `AttemptStarted` is the previous attempt plus one, no record of an older attempt follows
    it, and none was stamped during a newer attempt's lease (at or after its start)."""
    current = 0
    for record in log:
        if isinstance(record.body, AttemptStarted):
            assert record.attempt == current + 1, f"run {run_id}: attempt {record.attempt} skipped"
            current = record.attempt
        else:
            assert record.attempt == current, (
                f"run {run_id}, seq {record.seq}: written by attempt {record.attempt} after "
                f"attempt {current} had started"
            )
    latest: dt.datetime | None = None
    for record in log:
        if isinstance(record.body, AttemptStarted) and latest is not None:
            assert latest <= record.at, (
                f"run {run_id}: attempt {record.attempt} started at {record.at}, but the "
                f"attempt before it wrote a record stamped {latest}"
            )
        latest = record.at if latest is None else max(latest, record.at)
