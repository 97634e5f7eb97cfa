"""Live text across processes on PostgreSQL: a worker in another process streams a turn from a
scripted model server that holds the end of its answer; this process's screen gets the words
by LISTEN/NOTIFY before the turn's record is in the log, then the whole text from the log; a
screen that joins late gets the whole text too."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

import psych_runtime
from psych_runtime import AgentSpec, ModelRef, Scope
from psych_runtime.conversations import TextEvent, stream_text
from psych_runtime.errors import RunNotFound
from psych_runtime.ports import LiveText
from psych_runtime.records import ModelCallFinished
from psych_store_postgres import LiveConnectionLost, PostgresLiveChannel, PostgresStore
from psych_store_postgres._live import payloads_of, piece_of
from tests._eventually import eventually
from tests._postgres import connect, drop_schema, new_schema, test_dsn
from tests.integration._chat_server import Scripted, chunk, serve, usage, usage_chunk
from tests.integration._crash_kit import start_worker, stop

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCOPE = Scope(tenant="acme")
SPEC = AgentSpec(name="chat", model=ModelRef(model="gpt-test"))
BEFORE = ["Your ", "order ", "left ", "the ", "warehouse "]
AFTER = ["this ", "morning."]
TEXT = "".join(BEFORE + AFTER)


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    (await connect()).terminate()  # fails at once, saying how to start the server
    name = new_schema("live")
    try:
        yield name
    finally:
        await drop_schema(name)


class Watched(PostgresLiveChannel):
    """Says when a subscription is in place (LISTEN done)."""

    def __init__(self, dsn: str, schema: str) -> None:
        super().__init__(dsn, schema=schema)
        self.subscribed = asyncio.Event()

    @asynccontextmanager
    async def subscribe(self, run_id: str) -> AsyncIterator[AsyncIterator[LiveText]]:
        async with super().subscribe(run_id) as pieces:
            self.subscribed.set()
            yield pieces


async def test_live_words_cross_processes_before_the_record_and_late_screens_get_the_text(
    schema: str,
) -> None:
    store = PostgresStore(test_dsn(), schema=schema)
    await store.migrate()
    scoped = store.scoped(SCOPE)
    live = Watched(test_dsn(), schema)
    release = threading.Event()
    events: list[TextEvent] = []
    with serve() as server:
        server.reply(
            Scripted(
                events=[
                    chunk({"role": "assistant", "content": ""}),
                    *(chunk({"content": word}) for word in BEFORE),
                    *(chunk({"content": word}) for word in AFTER[:-1]),
                    chunk({"content": AFTER[-1]}, finish="stop"),
                    usage_chunk(usage(20, 9)),
                ],
                hold_at=1 + len(BEFORE),  # the rest of the answer waits for `release`
                release=release,
            )
        )
        run_id = await psych_runtime.dispatch(scoped, SPEC, "where is my order?")

        async def screen() -> None:
            async for event in stream_text(scoped, run_id, live=live, poll=0.2):
                events.append(event)

        screen_task = asyncio.create_task(screen())
        await asyncio.wait_for(live.subscribed.wait(), 30)
        worker = start_worker(
            "tests.integration.live_worker", f"{test_dsn()}?schema={schema}", server.base_url
        )
        try:
            shown = "".join(BEFORE)

            async def all_shown() -> bool:
                return "".join(e.text for e in events if e.kind == "delta") == shown

            await eventually(all_shown, "the live words before the hold", 30)
            # The worker is held in the middle of the answer: nothing of it is in the log.
            records = await scoped.read(run_id)
            assert not any(isinstance(r.body, ModelCallFinished) for r in records)
            assert all(e.kind == "delta" for e in events)
            assert {e.seq for e in events} == {records[-1].seq + 1}
            release.set()
            await asyncio.wait_for(screen_task, 60)
        finally:
            release.set()
            stop(worker)
            screen_task.cancel()
    records = await scoped.read(run_id)
    finished = [(r.seq, r.body) for r in records if isinstance(r.body, ModelCallFinished)]
    assert [body.text for _, body in finished] == [TEXT]
    finished_seq, body = finished[0]
    assert body.usage is not None and body.usage_source == "provider"
    final = events[-1]
    assert (final.kind, final.seq, final.text) == ("final", finished_seq, TEXT)
    deltas = "".join(e.text for e in events if e.kind == "delta")
    assert TEXT.startswith(deltas) and deltas.startswith("".join(BEFORE))
    # A screen that joins after the record gets the whole text, from the log.
    late = [(e.kind, e.text) async for e in stream_text(scoped, run_id, live=live)]
    assert late == [("final", TEXT)]
    # Another tenant gets nothing, not even a subscription.
    other = Watched(test_dsn(), schema)
    with pytest.raises(RunNotFound):
        async for _ in stream_text(store.scoped(Scope(tenant="globex")), run_id, live=other):
            pass
    assert not other.subscribed.is_set()
    await other.close()
    await live.close()
    await store.close()


async def test_long_pieces_are_split_under_the_notify_limit_and_arrive_whole(
    schema: str,
) -> None:
    text = "Ünïcödé 🙂 and\x00control\n" * 1200  # well past 8000 bytes
    piece = LiveText(run_id="run-long", attempt=1, seq=4, offset=10, text=text)
    payloads = payloads_of(piece)
    assert len(payloads) > 1
    assert all(len(p.encode()) <= 7900 for p in payloads)
    async with (
        PostgresLiveChannel(test_dsn(), schema=schema) as sender,
        PostgresLiveChannel(test_dsn(), schema=schema) as receiver,
        receiver.subscribe("run-long") as pieces,
        receiver.subscribe("run-other") as others,
    ):
        await sender.publish(piece)
        await sender.publish(LiveText("run-other", 1, 2, 0, "elsewhere"))
        got: list[LiveText] = []
        while sum(len(p.text) for p in got) < len(text):
            got.append(await asyncio.wait_for(anext(pieces), 10))
        assert "".join(p.text for p in got) == text
        offsets = [p.offset for p in got]
        assert offsets[0] == 10
        assert offsets == [10 + sum(len(p.text) for p in got[:i]) for i in range(len(got))]
        assert {(p.run_id, p.attempt, p.seq) for p in got} == {("run-long", 1, 4)}
        assert (await asyncio.wait_for(anext(others), 10)).text == "elsewhere"
    assert piece_of("not json") is None
    assert piece_of('{"r": "x", "a": "1", "s": 1, "o": 0, "t": ""}') is None


async def test_a_publish_to_a_database_that_is_not_there_raises_and_the_next_can_succeed(
    schema: str,
) -> None:
    nowhere = PostgresLiveChannel("postgresql://psych@127.0.0.1:9/none", connect_timeout=1)
    with pytest.raises(psych_runtime.errors.StoreUnavailable, match="cannot publish"):
        await nowhere.publish(LiveText("r", 1, 1, 0, "x"))
    await nowhere.close()


async def test_a_broken_listening_connection_ends_subscriptions_and_the_next_listens_again(
    schema: str,
) -> None:
    name = f"psych-live-{schema}"
    async with PostgresLiveChannel(test_dsn(), schema=schema, application_name=name) as live:
        async with live.subscribe("run-1") as pieces:
            admin = await connect()
            try:
                killed = await admin.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = $1",
                    f"{name} listen",
                )
            finally:
                await admin.close()
            assert killed == 1
            with pytest.raises(LiveConnectionLost):
                await asyncio.wait_for(anext(pieces), 10)
        async with live.subscribe("run-1") as pieces:
            await live.publish(LiveText("run-1", 1, 1, 0, "again"))
            assert (await asyncio.wait_for(anext(pieces), 10)).text == "again"
