"""Steering queues under races, with real worker processes on SQLite and PostgreSQL.

Runs work, wait for an approval and answer, while this process sends each of them user
messages on every queue at random moments, cancels some, and a worker is killed with SIGKILL
mid-way. Every message the inbox accepted must be in its run's log exactly once, in inbox
order, and land where its queue says: in the conversation, or kept for the next run (which a
continuation then carries). A message sent after its run ended is refused (`RunFinished`),
never silently dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import psych_runtime
from psych_core import RunState, fold_all
from psych_runtime import ScopedStore
from psych_runtime.conversations import send
from psych_runtime.errors import NotAwaitingApproval, RunFinished
from psych_runtime.ports import CONTINUED_KEY, Store, UserMessage
from psych_runtime.records import RunAdmitted, SignalIgnored, SignalReceived, UserInput
from psych_runtime.runtime._continuation import undelivered
from tests._postgres import connect, drop_schema, new_schema, test_dsn
from tests.integration._crash_kit import kill_group, start_worker, stop
from tests.integration._stores import open_store
from tests.integration.queue_worker import SCOPE, SPEC

RUNS = 6
MESSAGES = 7
QUEUES = ("steer", "follow_up", "next_run")


@dataclass
class Sent:
    text: str
    queue: str
    number: int | None  # None: refused, the run had ended


@pytest.fixture(params=["sqlite", "postgres"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'runs.sqlite'}"
        return
    (await connect()).terminate()  # fails at once, saying how to start the server
    schema = new_schema("queues")
    try:
        yield f"{test_dsn()}?schema={schema}&max_size=4"
    finally:
        await drop_schema(schema)


async def _sender(
    store: ScopedStore, run_id: str, seed: int, sent: list[Sent], cancels: bool
) -> None:
    rng = random.Random(seed)
    cancel_at = rng.randrange(MESSAGES) if cancels else -1
    for k in range(MESSAGES):
        # The last one comes late: about when the run completes, or after it has ended.
        await asyncio.sleep(rng.uniform(0, 0.12) if k < MESSAGES - 1 else rng.uniform(0, 4.0))
        queue = rng.choice(QUEUES)
        text = f"{run_id}:{k}:{queue}"
        try:
            number: int | None = await send(store, run_id, text, queue=queue)  # type: ignore[arg-type]
        except RunFinished:
            number = None
        sent.append(Sent(text, queue, number))
        if k == cancel_at:
            with contextlib.suppress(RunFinished):
                await psych_runtime.cancel(store, run_id, "the user pressed stop")


async def _late_sender(store: ScopedStore, run_id: str, sent: list[Sent]) -> None:
    for k in range(3):
        text = f"{run_id}:late{k}:next_run"
        try:
            number: int | None = await send(store, run_id, text, queue="next_run")
        except RunFinished:
            number = None
        sent.append(Sent(text, "next_run", number))
        await asyncio.sleep(0)


async def _approver(store: ScopedStore, run_ids: list[str], done: asyncio.Event) -> None:
    while not done.is_set():
        for run_id in run_ids:
            status = await psych_runtime.status(store, run_id)
            if status.waiting == "approval":
                for call_id in status.waiting_for:
                    with contextlib.suppress(NotAwaitingApproval, RunFinished):
                        await psych_runtime.approve(store, run_id, call_id, by="ana")
        await asyncio.sleep(0.05)


async def _all_ended(store: ScopedStore, run_ids: list[str], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        statuses = [await psych_runtime.status(store, run_id) for run_id in run_ids]
        if all(s.status in ("completed", "failed", "cancelled") for s in statuses):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"runs did not end: {[(s.run_id, s.status) for s in statuses]}")


async def test_every_message_lands_once_in_order_where_its_queue_says(url: str) -> None:
    store = open_store(url)
    await store.migrate()
    try:
        await _race(store, url)
    finally:
        await store.close()


async def _race(store: Store, url: str) -> None:
    scoped = store.scoped(SCOPE)
    workers = [start_worker("tests.integration.queue_worker", url) for _ in range(2)]
    try:
        run_ids = [await psych_runtime.dispatch(scoped, SPEC, f"start {i}") for i in range(RUNS)]
        sent: dict[str, list[Sent]] = {run_id: [] for run_id in run_ids}
        done = asyncio.Event()
        approving = asyncio.create_task(_approver(scoped, run_ids, done))
        senders = [
            _sender(scoped, run_id, seed, sent[run_id], cancels=seed % 3 == 0)
            for seed, run_id in enumerate(run_ids)
        ]

        async def crash() -> None:
            await asyncio.sleep(0.4)
            kill_group(workers[0].pid)  # a worker dies mid-way; its runs' leases expire
            workers[0].wait()
            workers[0] = start_worker("tests.integration.queue_worker", url)

        await asyncio.gather(*senders, crash())
        await _all_ended(scoped, run_ids)
        done.set()
        await approving
        # Stop, then type: messages for the next run race its continuation.
        late: dict[str, list[Sent]] = {run_id: [] for run_id in run_ids}
        continued: dict[str, str] = {}

        async def continue_(run_id: str) -> None:
            continued[run_id] = await psych_runtime.dispatch(
                scoped, SPEC, "go on", continues=run_id
            )

        await asyncio.gather(
            *(
                job
                for run_id in run_ids
                for job in (
                    _late_sender(scoped, run_id, late[run_id]),
                    continue_(run_id),
                )
            )
        )
    finally:
        for worker in workers:
            stop(worker)

    accepted_total = refused_total = after_end_total = 0
    for run_id in run_ids:
        log = await scoped.read(run_id)
        state = fold_all(RunState.empty(run_id), log)
        everything = sent[run_id] + late[run_id]
        accepted = [s for s in everything if s.number is not None]
        accepted_total += len([s for s in sent[run_id] if s.number is not None])
        refused_total += len([s for s in sent[run_id] if s.number is None])
        # Each accepted message is once in the run's inbox under the number it was given:
        # moved into the log (SignalReceived) while the run went on, or, sent for the next run
        # after the run ended, left in the inbox before the continuation's Continued mark.
        moved = [
            (r.body.number, r.body.signal.text)
            for r in log
            if isinstance(r.body, SignalReceived) and isinstance(r.body.signal, UserInput)
        ]
        inbox = await scoped.signals(run_id)
        (mark,) = [e.number for e in inbox if e.key == CONTINUED_KEY]
        after_end = sorted(
            (e.number, e.signal.text)
            for e in inbox
            if e.number > state.inbox_seen and isinstance(e.signal, UserInput)
        )
        assert all(number < mark for number, _ in after_end), run_id
        assert all(text.endswith(":next_run") for _, text in after_end), run_id
        assert sorted(moved + after_end) == sorted((s.number, s.text) for s in accepted), run_id
        after_end_total += len(after_end)
        refused = {s.text for s in everything if s.number is None}
        assert not refused & {text for _, text in moved + after_end}, "a refused message landed"
        numbers = [r.body.number for r in log if isinstance(r.body, SignalReceived | SignalIgnored)]
        assert numbers == sorted(numbers) and len(numbers) == len(set(numbers)), run_id
        assert not [r for r in log if isinstance(r.body, SignalIgnored) and "user" in r.body.key]
        # Where each landed: the conversation (once, in the order sent within its queue), or
        # kept for the next run.
        said = [
            m.text
            for m in state.conversation.messages()
            if isinstance(m, UserMessage) and m.text.startswith(run_id)
        ]
        kept = list(undelivered(state)) + [text for _, text in after_end]
        for queue in QUEUES:
            ours = [s.text for s in accepted if s.queue == queue]
            landed = [t for t in said + kept if t.endswith(f":{queue}")]
            assert sorted(landed) == sorted(ours), (run_id, queue, landed, ours)
            assert [t for t in said if t.endswith(f":{queue}")] == [t for t in ours if t in said], (
                run_id,
                queue,
            )
        assert len(said) + len(kept) == len(accepted), run_id
        assert not [t for t in said if t.endswith(":next_run")], "a next-run message reached it"
        # The continuation carries exactly what was kept, once, in order: what the run never
        # gave its model, then what reached its inbox after it ended, before the mark.
        first = (await scoped.read(continued[run_id], -1, 1))[0].body
        assert isinstance(first, RunAdmitted) and first.continues == run_id
        assert list(first.queued) == kept, run_id
    assert accepted_total > RUNS, "the races barely happened: too few messages reached runs"
    assert after_end_total > 0, "no message for the next run reached an ended run before its mark"
    assert accepted_total + refused_total == RUNS * MESSAGES
