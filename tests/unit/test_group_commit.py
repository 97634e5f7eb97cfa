"""A worker's group commit: a lone append goes straight out, appends that arrive while one is
in flight go out together, and every run hears exactly its own outcome."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence

import pytest

from psych_runtime import (
    AgentSpec,
    CodeTool,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Usage,
    Worker,
    dispatch,
)
from psych_runtime.errors import Conflict, LeaseLost, PsychError, StoreUnavailable
from psych_runtime.ports import (
    Append,
    AppendResult,
    Batch,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    RunIndex,
    ToolResultMessage,
)
from psych_runtime.records import Record, ToolCallFinished
from psych_runtime.runtime._group_commit import GroupCommit, groups_appends

pytestmark = pytest.mark.asyncio

SCOPE = Scope(tenant="t")


class CountingStore(MemoryStore):
    """A memory store that groups (overrides `append_many`) and keeps what it was sent. While
    `gate` is closed, appends wait at it: a test holds one in flight that way."""

    def __init__(self) -> None:
        super().__init__()
        self.singles: list[str] = []
        self.groups: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail_groups: Exception | None = None
        self.latency = 0.0  # seconds a commit takes

    async def append(self, run_id: str, attempt: int, batch: Batch) -> AppendResult:
        self.singles.append(run_id)
        await self.gate.wait()
        await asyncio.sleep(self.latency)
        return await super().append(run_id, attempt, batch)

    async def append_many(self, appends: Sequence[Append]) -> list[AppendResult | PsychError]:
        self.groups.append([one.run_id for one in appends])
        if self.fail_groups is not None:
            raise self.fail_groups
        await asyncio.sleep(self.latency)
        outcomes: list[AppendResult | PsychError] = []
        for one in appends:
            try:
                outcomes.append(await MemoryStore.append(self, one.run_id, one.attempt, one.batch))
            except PsychError as refused:
                outcomes.append(refused)
        return outcomes


async def claimed(store: MemoryStore, count: int) -> list[tuple[str, int, int]]:
    """`count` runs admitted and claimed: (run id, attempt, next seq) each."""
    spec = AgentSpec(name="a", model=ModelRef(model="m"), tools=(CodeTool(name="step"),))
    taken = []
    for index in range(count):
        run_id = await dispatch(store.scoped(SCOPE), spec, f"run {index}")
        claim = await store.claim("w", dt.timedelta(minutes=5), run_id=run_id)
        assert claim is not None
        taken.append((run_id, claim.attempt, claim.record.seq + 1))
    return taken


class ThreeSteps:
    """Calls `step` three times in each run, then answers (read off the conversation)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        done = sum(isinstance(message, ToolResultMessage) for message in request.messages)
        if done < 3:
            call = ModelToolCall(name="step", arguments=f'{{"index": {done}}}')
            return ModelResponse(model="m", tool_calls=(call,), usage=Usage(input=1, output=1))
        return ModelResponse(model="m", text="done", usage=Usage(input=1, output=1))


async def held_in_flight(
    store: CountingStore, commits: GroupCommit, run: tuple[str, int, int]
) -> asyncio.Future[AppendResult]:
    """`run`'s append, sent straight to the store and held there (its gate closed) until the
    test opens the gate: the appends made meanwhile wait to go out as a group."""
    store.gate.clear()
    run_id, attempt, seq = run
    first = asyncio.ensure_future(commits.append(run_id, attempt, one_record(run_id, attempt, seq)))
    await asyncio.sleep(0)
    return first


def one_record(run_id: str, attempt: int, seq: int) -> Batch:
    record = Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=dt.datetime.now(dt.UTC),
        body=ToolCallFinished(call_id="1.0", result=seq),
    )
    return Batch((record,), f"{attempt}.{seq}", RunIndex(status="running"))


async def test_only_a_store_that_overrides_append_many_is_grouped() -> None:
    assert not groups_appends(MemoryStore())
    assert groups_appends(CountingStore())


async def test_a_lone_append_goes_straight_to_append() -> None:
    store = CountingStore()
    commits = GroupCommit(store)
    ((run_id, attempt, seq),) = await claimed(store, 1)
    for offset in range(3):
        await commits.append(run_id, attempt, one_record(run_id, attempt, seq + offset))
    assert store.singles == [run_id] * 3
    assert store.groups == []


async def test_appends_arriving_during_one_in_flight_go_out_together() -> None:
    store = CountingStore()
    commits = GroupCommit(store)
    runs = await claimed(store, 5)
    first = await held_in_flight(store, commits, runs[0])
    rest = [
        asyncio.ensure_future(commits.append(run_id, attempt, one_record(run_id, attempt, seq)))
        for run_id, attempt, seq in runs[1:]
    ]
    await asyncio.sleep(0)
    assert store.singles == [runs[0][0]] and store.groups == []
    store.gate.set()
    assert await asyncio.gather(first, *rest) == [AppendResult(0)] * 5
    assert store.groups == [[run_id for run_id, _, _ in runs[1:]]]
    for run_id, _, seq in runs:
        assert [record.seq for record in await store.read(run_id)][-1] == seq


async def test_each_run_in_a_group_hears_its_own_refusal() -> None:
    store = CountingStore()
    commits = GroupCommit(store)
    runs = await claimed(store, 4)
    first = await held_in_flight(store, commits, runs[0])
    (good, attempt, seq), (taken, _, _), (stale, _, stale_seq) = runs[1:]
    waiting = [
        asyncio.ensure_future(commits.append(good, attempt, one_record(good, attempt, seq))),
        asyncio.ensure_future(commits.append(taken, 1, one_record(taken, 1, 1))),
        asyncio.ensure_future(commits.append(stale, 7, one_record(stale, 7, stale_seq))),
    ]
    store.gate.set()
    outcomes = await asyncio.gather(first, *waiting, return_exceptions=True)
    assert outcomes[:2] == [AppendResult(0), AppendResult(0)]
    assert isinstance(outcomes[2], Conflict) and outcomes[2].run_id == taken
    assert isinstance(outcomes[3], LeaseLost) and outcomes[3].run_id == stale
    assert store.groups == [[good, taken, stale]]


async def test_a_failed_group_fails_every_append_in_it() -> None:
    store = CountingStore()
    commits = GroupCommit(store)
    runs = await claimed(store, 3)
    first = await held_in_flight(store, commits, runs[0])
    store.fail_groups = StoreUnavailable("the server went away")
    rest = [
        asyncio.ensure_future(commits.append(run_id, attempt, one_record(run_id, attempt, seq)))
        for run_id, attempt, seq in runs[1:]
    ]
    store.gate.set()
    outcomes = await asyncio.gather(first, *rest, return_exceptions=True)
    assert outcomes[0] == AppendResult(0)
    assert all(isinstance(outcome, StoreUnavailable) for outcome in outcomes[1:]), outcomes
    # Nothing is held back: the next append goes out at once.
    store.fail_groups = None
    run_id, attempt, seq = runs[1]
    assert await commits.append(run_id, attempt, one_record(run_id, attempt, seq)) == (
        AppendResult(0)
    )


async def test_an_append_given_up_before_it_was_sent_is_not_sent() -> None:
    store = CountingStore()
    commits = GroupCommit(store)
    runs = await claimed(store, 3)
    first = await held_in_flight(store, commits, runs[0])
    gone = asyncio.ensure_future(commits.append(*runs[1][:2], one_record(*runs[1])))
    kept = asyncio.ensure_future(commits.append(*runs[2][:2], one_record(*runs[2])))
    await asyncio.sleep(0)
    gone.cancel()
    store.gate.set()
    assert await first == AppendResult(0)
    assert await kept == AppendResult(0)
    assert runs[1][0] not in [run_id for group in store.groups for run_id in group]
    assert runs[1][0] not in store.singles[1:]
    assert len(await store.read(runs[1][0])) == 2


async def test_a_worker_with_many_runs_in_flight_groups_their_appends() -> None:
    store = CountingStore()
    store.latency = 0.002
    spec = AgentSpec(name="a", model=ModelRef(model="m"), tools=(CodeTool(name="step"),))
    for index in range(8):
        await dispatch(store.scoped(SCOPE), spec, f"run {index}")

    async def step(index: int) -> int:
        await asyncio.sleep(0)
        return index

    worker = Worker(
        store, Runtime(model=ThreeSteps(), tools=[step]), concurrency=8, poll_interval=0.01
    )
    await worker.run_until_idle()
    page = await store.scoped(SCOPE).list_runs()
    assert {row.status for row in page.items} == {"completed"}
    assert store.groups, "eight runs in flight never shared a commit"
    assert max(len(group) for group in store.groups) > 1
