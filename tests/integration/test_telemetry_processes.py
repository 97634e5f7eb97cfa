"""One run is one trace, whichever processes carry it: worker processes export their spans
over OTLP/HTTP to a receiver on loopback, and a run killed mid-call, or suspended for an
approval, still arrives as one tree with one root, however many workers emitted its spans."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

import psych_runtime
from psych_core import REQUIRED_ATTRIBUTES, run_trace_id, span_id_of
from psych_runtime.ports import RunRow, Store
from psych_runtime.records import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptStarted,
    ModelCallFinished,
    Record,
    RunAdmitted,
    RunCompleted,
    RunSuspended,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallStarted,
)
from tests.integration._crash_kit import ROOT, ended, kill_group, stop
from tests.integration._otlp_receiver import ReceivedSpan, Receiver, receiving
from tests.integration._stores import open_store
from tests.integration.telemetry_worker import HELD, REFUNDS, SCOPE

pytestmark = pytest.mark.integration

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_REQUIRED = {str(operation): names for operation, names in REQUIRED_ATTRIBUTES.items()}


@dataclass
class World:
    """A SQLite file the test and its workers share, a folder for the tools' notes, and the
    receiver the workers export to."""

    url: str
    store: Store
    folder: Path
    receiver: Receiver
    processes: list[subprocess.Popen[bytes]]

    def start(self, name: str, compression: str = "none") -> subprocess.Popen[bytes]:
        """A worker process called `name`, leading a process group of its own."""
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        # The exporter's HTTP client honours proxy settings; the receiver is on loopback.
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.telemetry_worker",
                self.url,
                self.receiver.endpoint,
                name,
                str(self.folder),
                compression,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def notes(self, kind: str) -> list[list[str]]:
        """The tool's notes: idempotency key, attempt, pid."""
        path = self.folder / f"{kind}.txt"
        return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as running:
        yield running


@pytest.fixture
async def world(tmp_path: Path, receiver: Receiver) -> AsyncIterator[World]:
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    store = open_store(url)
    await store.migrate()
    folder = tmp_path / "notes"
    folder.mkdir()
    made = World(url, store, folder, receiver, [])
    try:
        yield made
    finally:
        for process in made.processes:
            kill_group(process.pid)
            process.wait(timeout=30)
        await store.close()


def _ns(at: dt.datetime) -> int:
    # As the adapter converts: records hold microseconds, which a float would round.
    return (at - _EPOCH) // dt.timedelta(microseconds=1) * 1_000


def _of_run(spans: Sequence[ReceivedSpan], run_id: str) -> list[ReceivedSpan]:
    return [span for span in spans if span.attributes.get("psych.run.id") == run_id]


def _root_arrived(run_id: str) -> Callable[[list[ReceivedSpan]], bool]:
    def ready(spans: list[ReceivedSpan]) -> bool:
        return any(
            span.attributes.get("gen_ai.operation.name") == "invoke_agent"
            for span in _of_run(spans, run_id)
        )

    return ready


async def _until(
    world: World,
    run_id: str,
    process: subprocess.Popen[bytes],
    status: str,
    seconds: float = 30,
) -> RunRow:
    deadline = time.monotonic() + seconds
    while True:
        row = await world.store.get_run(SCOPE.tenant, run_id)
        assert row is not None
        if row.status == status:
            return row
        assert process.poll() is None, f"the worker ended early with {process.returncode}"
        assert time.monotonic() < deadline, f"run {run_id} still {row.status} after {seconds} s"
        await asyncio.sleep(0.05)


async def _held(world: World, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not world.notes("held"):
        assert process.poll() is None, f"the worker ended early with {process.returncode}"
        assert time.monotonic() < deadline, f"the hold tool did not start within {seconds} s"
        await asyncio.sleep(0.05)


def _one_tree(spans: Sequence[ReceivedSpan], run_id: str, agent: str) -> ReceivedSpan:
    """The checks every run's trace passes: one trace id (the run's), each span once, one
    root, every other span under a span of the trace that arrived; the root returned."""
    mine = _of_run(spans, run_id)
    assert len(mine) == len(spans), "spans of another run arrived"
    assert {span.trace_id for span in spans} == {f"{run_trace_id(run_id, None):032x}"}
    ids = Counter(span.span_id for span in spans)
    assert ids.most_common(1)[0][1] == 1, f"a span arrived twice: {ids}"
    roots = [span for span in spans if span.parent_id is None]
    assert [root.name for root in roots] == [f"invoke_agent {agent}"]
    (root,) = roots
    assert root.span_id == f"{span_id_of(run_id, 'run'):016x}"
    for span in spans:
        assert span.parent_id is None or span.parent_id in ids, f"{span.name} has no parent"
        operation = str(span.attributes["gen_ai.operation.name"])
        missing = set(_REQUIRED[operation]) - set(span.attributes)
        assert not missing, f"{span.name} lacks {missing}"
        client = operation == "chat"  # a call to the model; the rest happen in the worker
        assert span.kind == (Span.SPAN_KIND_CLIENT if client else Span.SPAN_KIND_INTERNAL)
        assert span.start <= span.end
    return root


def _outcomes(log: Sequence[Record]) -> dict[str, str]:
    """Each tool call's outcome as the log recorded it, in the span's words."""
    outcomes: dict[str, str] = {}
    for record in log:
        match record.body:
            case ToolCallFinished(call_id=call_id):
                outcomes[call_id] = "finished"
            case ToolCallFailed(call_id=call_id):
                outcomes[call_id] = "failed"
            case ToolCallSettled(call_id=call_id):
                outcomes[call_id] = "unknown"
    return outcomes


def _attempts(root: ReceivedSpan) -> list[tuple[object, str, object]]:
    return [
        (
            event.attributes["psych.attempt"],
            str(event.attributes["psych.worker.id"]).split(":")[0],
            event.attributes["psych.attempt.after"],
        )
        for event in root.events_named("psych.attempt")
    ]


async def _finished_by_b(
    world: World, run_id: str, agent: str
) -> tuple[subprocess.Popen[bytes], list[Record], list[ReceivedSpan], ReceivedSpan]:
    """Worker B finishes the run and exits cleanly: B, the run's log, every span received,
    and the run's one root (checked to be one tree)."""
    second = world.start("B")
    row = await ended(world.store, SCOPE, run_id, second)
    assert row.status == "completed"
    await world.receiver.wait_for(_root_arrived(run_id), "the run's span")
    stop(second)
    assert second.returncode == 0
    log = await psych_runtime.read_log(world.store.scoped(SCOPE), run_id)
    spans = world.receiver.spans()
    root = _one_tree(spans, run_id, agent)
    assert not world.receiver.errors
    return second, log, spans, root


async def test_a_run_killed_mid_call_and_finished_by_another_worker_is_one_trace(
    world: World,
) -> None:
    scoped = world.store.scoped(SCOPE)
    run_id = await psych_runtime.dispatch(scoped, HELD, "hold on")
    first = world.start("A", compression="gzip")
    await _held(world, first)
    # The model's reply was committed, and its span sent, before the call began.
    await world.receiver.wait_for(lambda spans: bool(_of_run(spans, run_id)), "A's chat span")
    kill_group(first.pid)  # SIGKILL while `hold` runs
    first.wait(timeout=30)
    _second, log, spans, root = await _finished_by_b(world, run_id, HELD.name)

    # The run's span: from admission to the end, with both attempts, the second after an
    # interruption, each by the worker that made it.
    assert (root.start, root.end) == (_ns(log[0].at), _ns(log[-1].at))
    assert _attempts(root) == [(1, "A", "admission"), (2, "B", "interruption")]
    assert root.attributes["psych.run.status"] == "completed"
    assert root.attributes["psych.attempts"] == 2

    # The killed call: one span, ending as the log says it ended, over the whole time it was
    # open (started by A, settled by B).
    outcomes = _outcomes(log)
    assert outcomes == {"2.0": "unknown"}, "an unsafe call cut short is settled unknown"
    calls = [span for span in spans if span.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert [span.name for span in calls] == ["execute_tool hold"]
    (call,) = calls
    assert call.attributes["gen_ai.tool.call.id"] == "2.0"
    assert call.attributes["psych.tool.outcome"] == outcomes["2.0"]
    (started,) = [r for r in log if isinstance(r.body, ToolCallStarted)]
    (settled,) = [r for r in log if isinstance(r.body, ToolCallSettled)]
    assert (call.start, call.end) == (_ns(started.at), _ns(settled.at))
    assert call.parent_id == root.span_id
    assert len(world.notes("held")) == 1, "the unsafe call ran once"

    # A model call's span per model reply in the log, and nothing else.
    replies = [r.seq for r in log if isinstance(r.body, ModelCallFinished)]
    chats = [span for span in spans if span.attributes["gen_ai.operation.name"] == "chat"]
    assert Counter(span.attributes["psych.seq"] for span in chats) == Counter(replies)
    assert len(replies) == 2

    # Both processes emitted spans of the one trace: A the reply it committed before the
    # kill, B everything it committed after.
    emitted = {
        (span.name, span.attributes.get("psych.seq")): span.resource["service.instance.id"]
        for span in spans
    }
    assert emitted == {
        ("chat scripted", replies[0]): "A",
        ("execute_tool hold", settled.seq): "B",
        ("chat scripted", replies[1]): "B",
        (f"invoke_agent {HELD.name}", None): "B",
    }
    assert len(spans) == len(emitted)
    assert {span.compressed for span in spans} == {True, False}  # gzip from A, plain from B


async def test_a_run_approved_while_no_worker_holds_it_is_one_trace_over_the_wait(
    world: World,
) -> None:
    scoped = world.store.scoped(SCOPE)
    run_id = await psych_runtime.dispatch(scoped, REFUNDS, "refund A1")
    first = world.start("A")
    row = await _until(world, run_id, first, "waiting")
    assert (row.waiting, row.lease_owner) == ("approval", None)
    await world.receiver.wait_for(lambda spans: bool(_of_run(spans, run_id)), "A's chat span")
    stop(first)  # SIGTERM: A drains and exits, so only B can resume the run
    assert first.returncode == 0

    log = await psych_runtime.read_log(scoped, run_id)
    (asked,) = [r.body for r in log if isinstance(r.body, ApprovalRequested)]
    suspended_at = next(r.at for r in log if isinstance(r.body, RunSuspended))
    assert await psych_runtime.approve(scoped, run_id, asked.call_id, by="ana") == 1
    approved_at = dt.datetime.now(dt.UTC)
    second, log, spans, root = await _finished_by_b(world, run_id, REFUNDS.name)

    # The root spans the whole run, the wait included: from admission to the last record.
    admitted, completed = log[0], log[-1]
    assert isinstance(admitted.body, RunAdmitted) and isinstance(completed.body, RunCompleted)
    assert (root.start, root.end) == (_ns(admitted.at), _ns(completed.at))
    (decided,) = [r for r in log if isinstance(r.body, ApprovalDecided)]
    assert root.start < _ns(suspended_at) < _ns(decided.at) <= root.end
    assert decided.at >= approved_at - dt.timedelta(seconds=1)  # B moved it in, after A left

    # What happened to the run between its spans is on the root, in the log's order.
    names = [event.name for event in root.events]
    wanted = ["psych.approval.requested", "psych.suspended", "psych.approval.decided"]
    assert [name for name in names if name in wanted] == wanted
    (requested_event,) = root.events_named("psych.approval.requested")
    (suspended_event,) = root.events_named("psych.suspended")
    (decided_event,) = root.events_named("psych.approval.decided")
    assert requested_event.attributes["gen_ai.tool.call.id"] == asked.call_id
    assert suspended_event.attributes["psych.suspended.reason"] == "approval"
    assert suspended_event.at == _ns(suspended_at)
    assert decided_event.attributes["psych.approved"] is True
    assert decided_event.at == _ns(decided.at)
    assert _attempts(root) == [(1, "A", "admission"), (2, "B", "suspension")]

    # A emitted the model call before the wait, B everything after it: one trace id.
    emitted = sorted(
        (str(span.resource["service.instance.id"]), span.name) for span in spans if span is not root
    )
    assert emitted == [("A", "chat scripted"), ("B", "chat scripted"), ("B", "execute_tool refund")]
    assert root.resource["service.instance.id"] == "B"
    before = [span for span in spans if span.resource["service.instance.id"] == "A"]
    after = [span for span in spans if span.resource["service.instance.id"] == "B"]
    after.remove(root)
    assert max(span.end for span in before) <= suspended_event.at
    assert min(span.start for span in after) >= decided_event.at
    (refund,) = [span for span in after if span.name == "execute_tool refund"]
    assert refund.attributes["psych.tool.outcome"] == _outcomes(log)[asked.call_id] == "finished"
    ((key, attempt, pid),) = world.notes("refunds")
    assert (key, attempt, int(pid)) == (f"{run_id}:{asked.call_id}", "2", second.pid)
    # Both attempts' records name the workers the resources name.
    workers = [r.body.worker_id.split(":")[0] for r in log if isinstance(r.body, AttemptStarted)]
    assert workers == ["A", "B"]
