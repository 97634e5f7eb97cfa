"""Live text: `stream_text` from the log, live deltas beside it, and a channel that can fail."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

import psych_runtime
from psych_runtime import AgentSpec, CodeTool, MemoryStore, ModelRef, Runtime, Scope, Worker
from psych_runtime.conversations import LocalLiveChannel, TextEvent, stream_text
from psych_runtime.errors import PolicyDenied, RunNotFound
from psych_runtime.ports import (
    LiveChannel,
    LiveText,
    ModelRequest,
    ModelResponse,
    TextSink,
)
from psych_runtime.records import ModelCallFinished
from psych_runtime.testing.fake_model import FakeModel

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="support", model=ModelRef(model="fake"), tools=(CodeTool(name="lookup"),))


def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"{order_id} shipped"


def render(events: list[TextEvent]) -> tuple[list[str], str]:
    """What a chat screen shows, by the rules `stream_text` documents."""
    messages: list[str] = []
    provisional = ""
    for event in events:
        if event.kind == "delta":
            provisional += event.text
        elif event.kind == "final":
            provisional = ""
            messages.append(event.text)
        else:
            provisional = ""
    return messages, provisional


class HeldModel(FakeModel):
    """Streams a turn's text, then holds its answer until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.streamed = asyncio.Event()

    async def complete(
        self, request: ModelRequest, *, on_text: TextSink | None = None
    ) -> ModelResponse:
        response = await super().complete(request, on_text=on_text)
        self.streamed.set()
        await self.release.wait()
        return response


class Watched(LocalLiveChannel):
    """A local channel that says when someone subscribed."""

    def __init__(self) -> None:
        super().__init__()
        self.subscribed = asyncio.Event()

    @asynccontextmanager
    async def subscribe(self, run_id: str) -> AsyncIterator[AsyncIterator[LiveText]]:
        async with super().subscribe(run_id) as pieces:
            self.subscribed.set()
            yield pieces


async def collect(
    store: Any, run_id: str, *, live: LiveChannel | None = None, after: int = -1
) -> list[TextEvent]:
    return [e async for e in stream_text(store, run_id, live=live, after=after, poll=0.05)]


async def finished_run(model: FakeModel) -> tuple[MemoryStore, Any, str]:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    run_id = await psych_runtime.dispatch(scoped, SPEC, "where is A1?")
    await Worker(store, Runtime(model=model, tools=[lookup])).run_until_idle()
    return store, scoped, run_id


# -- from the log ---------------------------------------------------------------------------


async def test_a_finished_run_gives_each_assistant_message_once_in_seq_order() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("lookup", {"order_id": "A1"})])  # tools only: says nothing
        .turn(text="Checking B2 too.", tool_calls=[("lookup", {"order_id": "B2"})])
        .turn(text="Both shipped.")
    )
    _, scoped, run_id = await finished_run(model)
    events = await collect(scoped, run_id)
    records = await scoped.read(run_id)
    said = [
        (r.seq, r.body.text)
        for r in records
        if isinstance(r.body, ModelCallFinished) and r.body.text
    ]
    assert [(e.kind, e.seq, e.text) for e in events] == [("final", s, t) for s, t in said]
    assert [e.text for e in events] == ["Checking B2 too.", "Both shipped."]
    assert {e.run_id for e in events} == {run_id}


async def test_after_resumes_past_the_last_final_rendered_with_nothing_lost() -> None:
    model = FakeModel().turn(text="One.", tool_calls=[("lookup", {"order_id": "A1"})])
    _, scoped, run_id = await finished_run(model.turn(text="Two."))
    first, second = await collect(scoped, run_id)
    assert [e.text for e in await collect(scoped, run_id, after=first.seq)] == ["Two."]
    assert await collect(scoped, run_id, after=second.seq) == []
    # After any seq between the two: the second, whole.
    resumed = await collect(scoped, run_id, after=second.seq - 1)
    assert [(e.kind, e.text) for e in resumed] == [("final", "Two.")]


async def test_another_tenant_gets_run_not_found_and_nothing_is_subscribed() -> None:
    live = Watched()
    _, _, run_id = await finished_run(FakeModel().turn(text="Secret plans."))
    other = MemoryStore().scoped(Scope(tenant="acme"))  # the same tenant, another store
    with pytest.raises(RunNotFound):
        await collect(other, run_id, live=live)
    store = MemoryStore()
    mine = store.scoped(SCOPE)
    theirs = store.scoped(Scope(tenant="globex"))
    run_id = await psych_runtime.dispatch(mine, SPEC, "hi")
    with pytest.raises(RunNotFound) as caught:
        await collect(theirs, run_id, live=live)
    assert run_id in str(caught.value)
    assert not live.subscribed.is_set()


async def test_a_plain_store_and_a_policy_without_read_are_refused() -> None:
    store, _, run_id = await finished_run(FakeModel().turn(text="Hi."))
    with pytest.raises(TypeError, match="scoped store"):
        await collect(store, run_id)

    class NoReads(psych_runtime.AllowAll):
        def authorize(self, scope: Scope, action: Any, target: str) -> None:
            if action == "read":
                raise PolicyDenied(scope, action, target)

    with pytest.raises(PolicyDenied):
        await collect(store.scoped(SCOPE, policy=NoReads()), run_id)


# -- live -----------------------------------------------------------------------------------


async def test_live_deltas_arrive_before_the_record_and_the_final_supersedes_them() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    live = Watched()
    text = "Your order A1 left the warehouse this morning."
    model = HeldModel()
    model.turn(text=text)
    run_id = await psych_runtime.dispatch(scoped, SPEC, "where is A1?")
    events: list[TextEvent] = []
    first_delta = asyncio.Event()

    async def screen() -> None:
        async for event in stream_text(scoped, run_id, live=live, poll=0.05):
            events.append(event)
            if event.kind == "delta":
                first_delta.set()

    screen_task = asyncio.create_task(screen())
    await live.subscribed.wait()
    worker = asyncio.create_task(
        Worker(store, Runtime(model=model, tools=[lookup], live=live)).run_until_idle()
    )
    await model.streamed.wait()
    await first_delta.wait()
    # The model has streamed; its answer is held: nothing of it is in the log yet.
    assert not any(isinstance(r.body, ModelCallFinished) for r in await scoped.read(run_id))
    deltas = [e for e in events if e.kind == "delta"]
    assert deltas and text.startswith("".join(e.text for e in deltas))
    finished_at = (await scoped.run(run_id)).next_seq
    assert {e.seq for e in deltas} == {finished_at}  # keyed by the seq its append starts at
    model.release.set()
    await worker
    await asyncio.wait_for(screen_task, 10)
    assert events[-1] == TextEvent("final", run_id, finished_at, text)
    assert render(events) == ([text], "")
    # A screen that joins late gets the whole text from the log.
    assert [(e.kind, e.text) for e in await collect(scoped, run_id, live=live)] == [("final", text)]


async def test_without_a_live_channel_the_model_is_not_asked_to_stream() -> None:
    asked: list[bool] = []

    class Recording(FakeModel):
        async def complete(
            self, request: ModelRequest, *, on_text: TextSink | None = None
        ) -> ModelResponse:
            asked.append(on_text is not None)
            return await super().complete(request, on_text=on_text)

    await finished_run(Recording().turn(text="Hi."))
    assert asked == [False]


async def test_a_client_without_on_text_still_serves_a_runtime_with_live() -> None:
    class Plain:
        """A third-party client written before live text."""

        def __init__(self) -> None:
            self.inner = FakeModel().turn(text="Plain answer.")

        async def complete(self, request: ModelRequest) -> ModelResponse:
            return await self.inner.complete(request)

    assert not psych_runtime.ports.streams_text(Plain())
    assert psych_runtime.ports.streams_text(FakeModel())
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    live = LocalLiveChannel()
    run_id = await psych_runtime.dispatch(scoped, SPEC, "hi")
    await Worker(store, Runtime(model=Plain(), tools=[lookup], live=live)).run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"
    assert live.published == 0
    assert [e.text for e in await collect(scoped, run_id, live=live)] == ["Plain answer."]


class Failing(LocalLiveChannel):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.calls = 0

    async def publish(self, text: LiveText) -> None:
        self.calls += 1
        if self.how == "raise":
            raise ConnectionResetError("the live channel is down")
        await asyncio.sleep(3600)  # hangs


@pytest.mark.parametrize("how", ["raise", "hang"])
async def test_a_live_channel_that_fails_never_fails_or_stalls_the_run(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    live = Failing(how)
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    model = (
        FakeModel()
        .turn(text="Looking it up now.", tool_calls=[("lookup", {"order_id": "A1"})])
        .turn(text="A1 has shipped.")
    )
    run_id = await psych_runtime.dispatch(scoped, SPEC, "where is A1?")
    with caplog.at_level(logging.WARNING, logger="psych_runtime.live"):
        await asyncio.wait_for(
            Worker(store, Runtime(model=model, tools=[lookup], live=live)).run_until_idle(), 10
        )
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"
    assert live.calls == 2  # one try per model call; after a failure the call publishes no more
    stopped = [r for r in caplog.records if "live text stopped for this model call" in r.message]
    assert len(stopped) == 2 and run_id in stopped[0].message
    texts = [e.text for e in await collect(scoped, run_id)]
    assert texts == ["Looking it up now.", "A1 has shipped."]


# -- the channel in the box -------------------------------------------------------------------


def piece(run_id: str, offset: int, text: str, *, seq: int = 2, attempt: int = 1) -> LiveText:
    return LiveText(run_id=run_id, attempt=attempt, seq=seq, offset=offset, text=text)


async def test_local_channel_delivers_in_order_to_each_subscriber_of_the_run_only() -> None:
    live = LocalLiveChannel()
    assert isinstance(live, LiveChannel)
    await live.publish(piece("r1", 0, "before anyone listened"))
    async with (
        live.subscribe("r1") as first,
        live.subscribe("r1") as second,
        live.subscribe("r2") as other,
    ):
        await live.publish(piece("r1", 0, "Hel"))
        await live.publish(piece("r2", 0, "not yours"))
        await live.publish(piece("r1", 3, "lo"))
        got_first = [await anext(first), await anext(first)]
        got_second = [await anext(second), await anext(second)]
        assert [p.text for p in got_first] == ["Hel", "lo"] == [p.text for p in got_second]
        assert (await anext(other)).text == "not yours"
    await live.publish(piece("r1", 5, "!"))  # nobody listens any more: gone, no error
    assert live.published == 5


async def test_local_channel_drops_for_a_subscriber_that_fell_behind_and_counts_it() -> None:
    live = LocalLiveChannel(buffer=2)
    async with live.subscribe("r1") as pieces:
        for offset in range(4):
            await live.publish(piece("r1", offset, "x"))
        assert [(await anext(pieces)).offset for _ in range(2)] == [0, 1]
    assert live.dropped == 2
    with pytest.raises(ValueError, match="buffer"):
        LocalLiveChannel(buffer=0)


# -- how a screen renders pieces ---------------------------------------------------------------


async def follow_pieces(pieces: list[LiveText], model: FakeModel) -> list[TextEvent]:
    """Run one held turn, feed `pieces` to the screen by hand, then release the answer."""
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    live = Watched()
    run_id = await psych_runtime.dispatch(scoped, SPEC, "hi")
    events: list[TextEvent] = []
    seen = asyncio.Event()

    async def screen() -> None:
        async for event in stream_text(scoped, run_id, live=live, poll=0.05):
            events.append(event)
            seen.set()

    task = asyncio.create_task(screen())
    await live.subscribed.wait()
    seq = (await scoped.run(run_id)).next_seq
    for p in pieces:
        await live.publish(LiveText(run_id, p.attempt, seq + p.seq, p.offset, p.text))
    await live.publish(LiveText(run_id, 1, seq + 7, 0, "marker"))  # all above were handled
    while not any(e.text == "marker" for e in events):
        seen.clear()
        await seen.wait()
    await Worker(store, Runtime(model=model, tools=[lookup])).run_until_idle()
    await asyncio.wait_for(task, 10)
    return events


async def test_a_restarted_answer_discards_what_was_shown() -> None:
    events = await follow_pieces(
        [piece("", 0, "I think", seq=0), piece("", 7, " so", seq=0), piece("", 0, "Yes", seq=0)],
        FakeModel().turn(text="Yes."),
    )
    kinds = [(e.kind, e.text) for e in events]
    assert kinds[:5] == [
        ("delta", "I think"),
        ("delta", " so"),
        ("discard", ""),
        ("delta", "Yes"),
        ("discard", ""),  # the marker is a newer call's
    ]
    assert render(events) == (["Yes."], "")


async def test_a_gap_or_a_late_join_shows_nothing_more_until_the_log_has_the_text() -> None:
    events = await follow_pieces(
        [
            piece("", 4, "late", seq=0),  # joined late: offset 4 is not the start
            piece("", 8, "more", seq=0),
            piece("", 0, "A", seq=1),  # the next call, from its start
            piece("", 2, "C", seq=1),  # a piece went missing
            piece("", 3, "D", seq=1),
        ],
        FakeModel().turn(text="Done."),
    )
    kinds = [(e.kind, e.text) for e in events]
    assert kinds[:3] == [("delta", "A"), ("discard", ""), ("delta", "marker")]
    assert render(events) == (["Done."], "")


async def test_pieces_of_a_superseded_attempt_or_a_recorded_call_are_ignored() -> None:
    events = await follow_pieces(
        [
            piece("", 0, "new attempt", seq=0, attempt=2),
            piece("", 0, "old attempt", seq=0, attempt=1),
            piece("", 0, "recorded", seq=-1),  # a seq already in the log
        ],
        FakeModel().turn(text="Done."),
    )
    assert [(e.kind, e.text) for e in events][:2] == [
        ("delta", "new attempt"),
        ("discard", ""),
    ]


def test_fake_model_pieces_must_join_to_the_text() -> None:
    with pytest.raises(ValueError, match="do not join"):
        FakeModel().turn(text="Hello", pieces=["Hel", "p"])


async def test_fake_model_streams_its_text_word_by_word_with_offsets() -> None:
    got: list[tuple[str, int]] = []
    model = FakeModel().turn(text="Hello there, world").turn(text="ab", pieces=["a", "b"])
    request = ModelRequest(run_id="r", model=ModelRef(model="fake"), instructions="", messages=())
    response = await model.complete(request, on_text=lambda t, o: got.append((t, o)))
    assert response.text == "Hello there, world"
    assert got == [("Hello ", 0), ("there, ", 6), ("world", 13)]
    got.clear()
    await model.complete(request, on_text=lambda t, o: got.append((t, o)))
    assert got == [("a", 0), ("b", 1)]


async def test_a_busy_channel_gets_the_waiting_pieces_joined_in_order() -> None:
    from psych_runtime.runtime._live_feed import LiveFeed

    gate = asyncio.Event()
    busy = asyncio.Event()

    class Busy(LocalLiveChannel):
        async def publish(self, text: LiveText) -> None:
            busy.set()
            await gate.wait()
            await super().publish(text)

    live = Busy()
    async with live.subscribe("r1") as pieces:
        feed = LiveFeed(live, "r1", attempt=3, seq=7)
        feed.on_text("He", 0)
        await busy.wait()  # the sender took "He" and waits at the gate
        for text, offset in [("llo", 2), (" wor", 5), ("ld", 9), ("Again", 0)]:
            feed.on_text(text, offset)
        gate.set()
        await feed.close()
        got = [await anext(pieces) for _ in range(feed.sent)]
    assert [(p.offset, p.text) for p in got] == [(0, "He"), (2, "llo world"), (0, "Again")]
    assert {(p.run_id, p.attempt, p.seq) for p in got} == {("r1", 3, 7)}
    assert (feed.sent, feed.dropped, feed.failures) == (3, 0, 0)


async def test_past_its_buffer_a_feed_drops_pieces_and_counts_them() -> None:
    from psych_runtime.runtime._live_feed import LiveFeed

    live = LocalLiveChannel()
    async with live.subscribe("r1") as pieces:
        feed = LiveFeed(live, "r1", attempt=1, seq=2, max_pending=5)
        feed.on_text("abc", 0)
        feed.on_text("def", 3)  # 6 characters waiting: over the buffer
        await feed.close()
        assert (await anext(pieces)).text == "abc"
    assert (feed.sent, feed.dropped) == (1, 1)


async def test_live_text_never_carries_a_known_secret_not_even_split_across_pieces() -> None:
    secret = "tok-9f8e7d6c5b4a"
    secrets = psych_runtime.EnvSecretResolver(["API_TOKEN"], environ={"API_TOKEN": secret})
    text = f"The token is {secret}, keep it safe."
    pieces = ["The token is tok-9f8", "e7d6c5", "b4a, keep", " it safe."]
    live = LocalLiveChannel()
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    run_id = await psych_runtime.dispatch(scoped, SPEC, "what is the token?")
    async with live.subscribe(run_id) as published:
        model = FakeModel().turn(text=text, pieces=pieces)
        runtime = Runtime(model=model, tools=[lookup], live=live, secrets=secrets)
        await Worker(store, runtime).run_until_idle()
        got = [await anext(published) for _ in range(live.published)]
    said = "".join(p.text for p in got)
    assert said == "The token is [redacted:API_TOKEN], keep it safe."
    assert all(secret[:4] not in p.text for p in got)  # no part of it, even the first
    assert [p.offset for p in got] == [sum(len(q.text) for q in got[:i]) for i in range(len(got))]
    records = await scoped.read(run_id)
    assert [r.body.text for r in records if isinstance(r.body, ModelCallFinished)] == [said]
