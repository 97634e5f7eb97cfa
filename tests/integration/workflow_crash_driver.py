"""The workflow crash test's driver: dispatches workflow runs, sends their events, keeps worker
processes running while killing them (at random and at every step boundary a workflow passes
through), then checks every log against the ledger of what the tools did.

Used by the workflow crash tests for every durable store (the URL says which). The worker is
`tests.integration.workflow_crash_worker`; the agent version of this test is `crash_driver`.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from psych_core import RunState, fold_all, parse_call_id, try_call_id
from psych_runtime import RunQuery, Scope, dispatch, send_event
from psych_runtime.ports import RunRow, Store
from psych_runtime.records import (
    AttemptStarted,
    EventTaken,
    Record,
    RunCompleted,
    RunSuspended,
    StepRetrying,
    StepSettled,
    StepsPlanned,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)
from tests.integration._stores import open_store
from tests.integration.crash_driver import check_one_live_attempt
from tests.integration.workflow_crash_worker import (
    EVENT,
    SAFE,
    SPEC,
    UNSAFE,
    expected_output,
    input_of,
)

ROOT = Path(__file__).resolve().parents[2]
SCOPE = Scope(tenant="wf-crash")
FINAL = ("completed", "failed", "cancelled")

REACHABLE = (
    "after_claim",
    "after_tool_returned",
    "after_commit:steps_planned",
    "after_commit:tool_call_started",
    "after_commit:tool_call_finished",
    "after_commit:tool_call_failed",
    "after_commit:tool_call_waiting",
    "after_commit:run_suspended",
    "after_commit:signal_received",
    "after_commit:tool_call_settled",
    "after_commit:run_completed",
)
"""The step boundaries a run of the crash workflow passes through (a workflow calls no model,
so ``after_model_returned`` and ``after_commit:model_call_finished`` are never reached)."""

WHEN = ("early", "any time", "late")
"""When a run's event is sent: right after dispatch (so it is kept until the wait step takes
it), after a random delay (before or after the run waits), or once the run waits for it."""


@dataclass(frozen=True)
class Execution:
    """One line of the ledger: a tool ran."""

    kind: str  # "safe" or "unsafe"
    key: str  # ctx.idempotency_key: {run_id}:{memo key}, shared by every try of a step
    call_id: str
    attempt: int
    pid: int


@dataclass
class Dispatched:
    """A run the driver admitted, and what it owes it."""

    customer: str
    when: str
    payload: str
    send_at: float
    sent: bool = False


@dataclass
class WorkflowCrashOutcome:
    """What a workflow crash run did, for the test to assert on."""

    runs: dict[str, Dispatched] = field(default_factory=dict)
    logs: dict[str, list[Record]] = field(default_factory=dict)
    ledger: list[Execution] = field(default_factory=list)
    kills: int = 0
    fault_deaths: int = 0
    points_hit: set[str] = field(default_factory=set)
    deaths: dict[int, str] = field(default_factory=dict)  # pid -> "driver" or the fault point
    other_exits: list[tuple[int, int]] = field(default_factory=list)  # (pid, exit code)
    seconds: float = 0.0


@dataclass
class Tally:
    """What the kills did to the runs, counted from the logs (for the test's report)."""

    unknown: int = 0
    unsafe_calls: int = 0
    longest_streak: int = 0  # the most unknown outcomes of one step in a row
    retries: collections.Counter[str] = field(default_factory=collections.Counter)
    safe_reruns: int = 0
    attempts: int = 0
    wakes: list[float] = field(default_factory=list)  # seconds from a retry's due time to its claim


def _start(url: str, ledger: Path, fault: str | None, lease_ttl: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CRASH_LEASE_TTL": str(lease_ttl)}
    env.pop("PSYCH_FAULTS", None)
    if fault:
        env["PSYCH_FAULTS"] = fault
    with (ledger.parent / "workers.log").open("ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.integration.workflow_crash_worker", url, str(ledger)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


async def crash_workflows(
    url: str,
    ledger: Path,
    *,
    runs: int = 24,
    workers: int = 2,
    min_kills: int = 100,
    kill_every: tuple[int, int] = (5, 40),
    lease_ttl: float = 2.0,
    deadline_s: float = 200,
    seed: int = 11,
) -> WorkflowCrashOutcome:
    """Dispatch `runs` workflow runs (and more while kills are still owed) and keep `workers`
    processes serving them while killing them, until at least `min_kills` processes died by
    SIGKILL and every point in `REACHABLE` was died at; then kill no more and let every run
    end.

    A worker holding a lease is killed from outside each time the runs have written a random
    number of records in `kill_every` (progress, not time: a slow machine takes longer but
    sees as many crashes per step); the others die at the fault points they are armed with.
    """
    store = open_store(url)
    try:
        await store.migrate()
        await asyncio.to_thread(ledger.touch)
        crash = _Crash(store, url, ledger, random.Random(seed), lease_ttl)
        return await crash.run(runs, workers, min_kills, kill_every, deadline_s)
    finally:
        await store.close()


class _Crash:
    """The driver's state: the runs it owes events to, the processes and what each is armed
    with, and the outcome so far."""

    def __init__(
        self, store: Store, url: str, ledger: Path, rng: random.Random, lease_ttl: float
    ) -> None:
        self.store = store
        self.scoped = store.scoped(SCOPE)
        self.url = url
        self.ledger = ledger
        self.rng = rng
        self.lease_ttl = lease_ttl
        self.outcome = WorkflowCrashOutcome()
        self.armed: dict[int, str | None] = {}
        self.draining = False
        # Every point is armed at least once, in turn, a few hits in; then mostly the ones
        # not died at yet, else a random mix (or none: a worker only killed from outside).
        self.schedule = [f"{point}@{rng.randint(1, 3)}" for point in REACHABLE]

    async def run(
        self,
        runs: int,
        workers: int,
        min_kills: int,
        kill_every: tuple[int, int],
        deadline_s: float,
    ) -> WorkflowCrashOutcome:
        outcome = self.outcome
        started = time.monotonic()
        await self.admit(runs)
        procs = [self.launch() for _ in range(workers)]
        progress_at_kill = 0
        kill_after = self.rng.randint(*kill_every)
        try:
            while True:
                if time.monotonic() - started > deadline_s:
                    raise AssertionError(
                        f"runs did not all end within {deadline_s} s ({outcome.kills} kills, "
                        f"points died at: {sorted(outcome.points_hit)})"
                    )
                for index, process in enumerate(procs):
                    if process.poll() is not None:
                        self.reap(process)
                        procs[index] = self.launch()
                rows = (await self.store.list_runs(SCOPE.tenant, RunQuery(limit=10_000))).items
                await self.send_events(rows)
                progress = sum(row.next_seq for row in rows)
                owed = not self.draining and progress - progress_at_kill >= kill_after
                if owed and self.kill_a_lease_holder(procs, rows):
                    progress_at_kill = progress
                    kill_after = self.rng.randint(*kill_every)
                ended = sum(row.status in FINAL for row in rows)
                if outcome.kills >= min_kills and outcome.points_hit >= set(REACHABLE):
                    self.draining = True
                    if ended == len(outcome.runs):
                        break
                elif len(outcome.runs) - ended < runs // 2:
                    # Kills are still owed: keep work in hand to kill into.
                    await self.admit(runs // 2)
                await asyncio.sleep(0.1)
        finally:
            stop(procs)
        outcome.seconds = time.monotonic() - started
        outcome.logs = {run_id: await self.scoped.read(run_id) for run_id in outcome.runs}
        for line in (await asyncio.to_thread(self.ledger.read_text)).splitlines():
            kind, key, call_id, attempt, pid = line.split()
            outcome.ledger.append(Execution(kind, key, call_id, int(attempt), int(pid)))
        return outcome

    async def admit(self, count: int) -> None:
        for _ in range(count):
            number = len(self.outcome.runs)
            customer = f"c{number}"
            run_id = await dispatch(self.scoped, SPEC, json.dumps(input_of(customer)))
            when = WHEN[number % len(WHEN)]
            delay = self.rng.uniform(0, 3.0) if when == "any time" else 0.0
            owed = Dispatched(customer, when, f"{when} {number}", time.monotonic() + delay)
            self.outcome.runs[run_id] = owed
            if when == "early":
                await send_event(self.scoped, run_id, EVENT, owed.payload)
                owed.sent = True

    async def send_events(self, rows: Sequence[RunRow]) -> None:
        # The only wait with no due time is the wait for the event (a retry's wait has one).
        waiting = {row.run_id for row in rows if row.status == "waiting" and not row.runnable_at}
        now = time.monotonic()
        for run_id, owed in self.outcome.runs.items():
            due = owed.when == "any time" and now >= owed.send_at
            if not owed.sent and (due or run_id in waiting):
                await send_event(self.scoped, run_id, EVENT, owed.payload)
                owed.sent = True

    def launch(self) -> subprocess.Popen[bytes]:
        missing = [point for point in REACHABLE if point not in self.outcome.points_hit]
        fault: str | None
        if self.draining:
            fault = None
        elif self.schedule:
            fault = self.schedule.pop(0)
        elif missing and self.rng.random() < 0.7:
            fault = f"{self.rng.choice(missing)}@1"
        else:
            point = self.rng.choice((*REACHABLE, None, None))
            fault = f"{point}@{self.rng.randint(1, 8)}" if point else None
        process = _start(self.url, self.ledger, fault, self.lease_ttl)
        self.armed[process.pid] = fault
        return process

    def reap(self, process: subprocess.Popen[bytes]) -> None:
        """Count a worker process that ended."""
        outcome = self.outcome
        if process.returncode != -signal.SIGKILL:
            outcome.other_exits.append((process.pid, process.returncode))
            return
        outcome.kills += 1
        fault = self.armed.get(process.pid)
        outcome.deaths[process.pid] = fault or "driver"
        if fault:
            # Nobody but the process itself kills an armed worker the driver spared.
            outcome.fault_deaths += 1
            outcome.points_hit.add(fault.split("@")[0])

    def kill_a_lease_holder(
        self, procs: Sequence[subprocess.Popen[bytes]], rows: Sequence[RunRow]
    ) -> bool:
        """SIGKILL a worker that holds a lease now (so the kill cuts a run short and a
        take-over follows); False when none does."""
        owners = {
            row.lease_owner.split(":")[1]
            for row in rows
            if row.status == "running" and row.lease_owner
        }
        holders = [p for p in procs if str(p.pid) in owners and p.poll() is None]
        if not holders:
            return False
        victim = self.rng.choice(holders)
        self.armed[victim.pid] = None
        victim.send_signal(signal.SIGKILL)
        return True


def stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


# -- the checks --------------------------------------------------------------------------------


def check_workflows(outcome: WorkflowCrashOutcome) -> None:
    """Everything the workflow crash test promises, asserted."""
    assert not outcome.other_exits, f"workers exited other than by SIGKILL: {outcome.other_exits}"
    ran: dict[str, list[Execution]] = collections.defaultdict(list)
    for execution in outcome.ledger:
        run_id, _, key = execution.key.partition(":")
        assert run_id in outcome.runs, f"a tool ran for a run never dispatched: {execution}"
        assert parse_call_id(execution.call_id).key == key, f"key of another step: {execution}"
        ran[run_id].append(execution)
    for run_id, log in outcome.logs.items():
        _check_run(run_id, log, outcome, ran[run_id])


def _check_run(
    run_id: str,
    log: list[Record],
    outcome: WorkflowCrashOutcome,
    executions: list[Execution],
) -> None:
    owed = outcome.runs[run_id]
    # Folding checks there is no gap and no repeated seq, and that every record fits.
    state = fold_all(RunState.empty(run_id, SPEC), log)
    assert [r.seq for r in log] == list(range(len(log))), f"run {run_id}: seqs have a gap"
    assert state.status == "completed", (
        f"run {run_id} ended {state.status}: {state.error}\n{story(log, outcome)}"
    )
    last = log[-1].body
    assert isinstance(last, RunCompleted), f"run {run_id} ends with {last.type}"
    assert last.output == expected_output(owed.customer, owed.payload), f"run {run_id}: {last}"
    check_one_live_attempt(run_id, log)

    pid_of: dict[int, int] = {}
    planned: dict[str, int] = {}  # call id -> seq of the StepsPlanned naming it
    completed: dict[str, int] = {}  # step key -> seq of the StepsPlanned settling it completed
    retried: dict[tuple[str, int], str] = {}  # (step key, try that failed) -> failure kind
    started: dict[str, list[Record]] = collections.defaultdict(list)
    ended: dict[str, Record] = {}  # call id -> its finish, failure or unknown settlement
    taken = False
    due: dt.datetime | None = None  # when the run, suspended, waits for a retry to be due
    for record in log:
        body = record.body
        if isinstance(body, RunSuspended):
            due = body.due_at
        elif isinstance(body, AttemptStarted):
            pid_of[record.attempt] = int(body.worker_id.split(":")[1])
            # No signal comes during a retry's wait: only its due time may wake the run.
            assert due is None or record.at >= due, (
                f"run {run_id}, seq {record.seq}: claimed at {record.at}, before the retry "
                f"it waited for was due at {due}"
            )
            due = None
        elif isinstance(body, StepsPlanned):
            for event in body.events:
                if isinstance(event, StepSettled) and event.status == "completed":
                    completed[event.key] = record.seq
                elif isinstance(event, StepRetrying):
                    retried[(event.key, event.attempt)] = event.failure.kind
                elif isinstance(event, EventTaken):
                    taken = True
            for call in body.calls:
                # A round's calls are planned once; one cut off is taken up from the log,
                # never planned again, and a completed step is never planned again.
                assert call.call_id not in planned, (
                    f"run {run_id}, seq {record.seq}: {call.call_id} planned again (first at "
                    f"seq {planned[call.call_id]})"
                )
                step = parse_call_id(call.call_id).key
                assert step not in completed, (
                    f"run {run_id}, seq {record.seq}: {call.call_id} planned after its step "
                    f"completed at seq {completed[step]}"
                )
                planned[call.call_id] = record.seq
        elif isinstance(body, ToolCallStarted):
            assert body.call_id in planned, f"run {run_id}: {body.call_id} started unplanned"
            assert body.call_id not in ended, f"run {run_id}: {body.call_id} started after it ended"
            started[body.call_id].append(record)
        elif isinstance(body, ToolCallSettled):
            # Only a call whose worker died while it was in flight is settled unknown.
            starts = started[body.call_id]
            assert starts, f"run {run_id}: {body.call_id} settled unknown but never started"
            begun = starts[-1]
            assert begun.attempt < record.attempt, (
                f"run {run_id}, seq {record.seq}: {body.call_id} settled by the attempt that "
                "started it"
            )
            assert pid_of[begun.attempt] in outcome.deaths, (
                f"run {run_id}, seq {record.seq}: {body.call_id} settled unknown, but the worker "
                f"of attempt {begun.attempt} (pid {pid_of[begun.attempt]}) was never killed"
            )
            assert begun.body.name in UNSAFE, f"run {run_id}: safe {body.call_id} settled"  # type: ignore[union-attr]
            ended[body.call_id] = record
        elif isinstance(body, ToolCallFinished | ToolCallFailed):
            assert started[body.call_id], f"run {run_id}: {body.call_id} ended unstarted"
            ended[body.call_id] = record

    # The event was kept when it came early, and waited for when it came late.
    if owed.when == "early":
        assert taken and "shipped" not in planned, f"run {run_id}: early event not kept"
    if owed.when == "late":
        assert not taken and "shipped" in planned, f"run {run_id}: late event not waited for"

    runs_of = collections.Counter(e.call_id for e in executions)
    for execution in executions:
        # A tool ran only after its start was committed, under the attempt that started it,
        # and never after its result was in (a completed step does not run again).
        starts = started[execution.call_id]
        assert execution.attempt in {s.attempt for s in starts}, (
            f"run {run_id}: {execution.call_id} ran under attempt {execution.attempt}, "
            f"which did not start it"
        )
        end = ended.get(execution.call_id)
        assert end is None or execution.attempt <= end.attempt, (
            f"run {run_id}: {execution.call_id} ran again (attempt {execution.attempt}) after "
            f"it ended at seq {end.seq}"
        )
    for call_id, starts in started.items():
        name = starts[0].body.name  # type: ignore[union-attr]
        if name in SAFE:
            assert runs_of[call_id] >= 1, f"run {run_id}: safe call {call_id} never ran"
            continue
        if name not in UNSAFE:
            continue  # the built-in waits (psych:wait, psych:sleep) touch no ledger
        assert len(starts) == 1, f"run {run_id}: unsafe call {call_id} was started twice"
        assert runs_of[call_id] <= 1, f"run {run_id}: unsafe call {call_id} ran twice"
        end = ended.get(call_id)
        assert end is not None, f"run {run_id}: unsafe call {call_id} never ended"
        if not isinstance(end.body, ToolCallSettled):
            # A result (or an error) came back, so the tool certainly ran.
            assert runs_of[call_id] == 1, f"run {run_id}: {call_id} ended but never ran"
        # Across tries, an unsafe step runs again only when the try before it failed or its
        # outcome is unknown, and the retry says so.
        tried = parse_call_id(call_id)
        if tried.attempt > 1:
            kind = retried.get((tried.key, tried.attempt - 1))
            assert kind in ("error", "outcome_unknown"), (
                f"run {run_id}: {call_id} ran, but try {tried.attempt - 1} was not retried "
                f"after a failure or an unknown outcome ({kind})"
            )
            previous = ended[try_call_id(tried.key, tried.attempt - 1)]
            assert isinstance(previous.body, ToolCallFailed | ToolCallSettled), (
                f"run {run_id}: {call_id} ran after try {tried.attempt - 1} ended "
                f"{previous.body.type}"
            )
    for call_id in runs_of:
        assert call_id in started, f"run {run_id}: {call_id} ran but never started"


def tally(outcome: WorkflowCrashOutcome) -> Tally:
    """What the kills did to the runs, counted from the logs and the ledger."""
    counted = Tally()
    for log in outcome.logs.values():
        unknown: collections.Counter[str] = collections.Counter()
        due: dt.datetime | None = None
        for record in log:
            body = record.body
            if isinstance(body, RunSuspended):
                due = body.due_at
            elif isinstance(body, AttemptStarted):
                counted.attempts += 1
                if due is not None:
                    counted.wakes.append((record.at - due).total_seconds())
                due = None
            elif isinstance(body, ToolCallStarted) and body.name in UNSAFE:
                counted.unsafe_calls += 1
            elif isinstance(body, ToolCallSettled):
                unknown[parse_call_id(body.call_id).key] += 1
            elif isinstance(body, StepsPlanned):
                for event in body.events:
                    if isinstance(event, StepRetrying):
                        counted.retries[event.failure.kind] += 1
        counted.unknown += sum(unknown.values())
        counted.longest_streak = max(counted.longest_streak, *unknown.values(), 0)
    safe = [(e.key, e.call_id) for e in outcome.ledger if e.kind == "safe"]
    counted.safe_reruns = len(safe) - len(set(safe))
    return counted


def summary(outcome: WorkflowCrashOutcome, counted: Tally) -> str:
    """One line saying what a crash run did."""
    return (
        f"{len(outcome.runs)} runs in {outcome.seconds:.0f} s: {outcome.kills} kills "
        f"({outcome.fault_deaths} at fault points), {counted.attempts} attempts, "
        f"{counted.unknown} of {counted.unsafe_calls} unsafe calls settled unknown (at most "
        f"{counted.longest_streak} of one step in a row), retries {dict(counted.retries)}, "
        f"{counted.safe_reruns} safe calls ran again; timed waits claimed "
        f"{min(counted.wakes, default=0):+.3f} to {max(counted.wakes, default=0):+.3f} s "
        "from their due time"
    )


def story(log: Sequence[Record], outcome: WorkflowCrashOutcome) -> str:
    """A run's log, one line a record, with how each attempt's worker died: for a failure's
    message."""
    lines = []
    for record in log:
        body = record.body
        what = getattr(body, "call_id", "")
        if isinstance(body, AttemptStarted):
            pid = int(body.worker_id.split(":")[1])
            what = f"pid {pid}, died: {outcome.deaths.get(pid, 'no')}"
        elif isinstance(body, StepsPlanned):
            what = " ".join(call.call_id for call in body.calls)
        lines.append(f"  {record.seq:3} attempt {record.attempt:3} {body.type} {what}")
    return "\n".join(lines)
