"""The live channel contract suite: one abstract pytest class every `LiveChannel` passes.

Certify an adapter with a few lines::

    from psych_runtime.testing.live_contract import LiveChannelContract
    from my_live import MyLiveChannel


    class TestMyLiveChannel(LiveChannelContract):
        async def create_channel(self) -> MyLiveChannel:
            return MyLiveChannel(...)  # fresh: no other test publishes to or follows its runs

        async def close_channel(self, channel: LiveChannel) -> None:  # optional
            await channel.close()

What it covers, as the port states it: a subscriber gets every piece published for its run
once its ``async with`` block has begun (before it first reads, and read from another task
too), in publish order, and nothing published before; never another run's pieces (run ids
that differ by a suffix, a case, a space); each of several subscribers of a run gets every
piece; a piece's fields arrive unchanged (non-ASCII, control and JSON-like text, long text,
large numbers); publishing neither fails nor blocks with no subscriber, with a subscriber that
never reads, or for odd pieces (empty text, a lone surrogate); leaving a subscription ends
delivery to it and disturbs neither the other subscribers nor later subscriptions, however it
is left (pieces unread, a reader waiting in another task, an exception, many at once).

How pieces are compared. The port lets a channel drop pieces (a full buffer, a broken
connection); a channel whose subscribers keep up and whose connections hold drops none, and
the suite never publishes more than `burst` pieces ahead of a reader, except to test that
publishing does not block. A channel may carry a piece as several that follow each other (as
a channel with a payload limit splits long text): the pieces of one answer are joined where
their offsets meet before they are compared, so what is checked is each answer's text, with
its run, attempt, seq and offsets, in order. A test waits at most `wait` seconds for a piece:
a broken channel fails the test, never hangs it.

This module imports pytest: it ships in the ``psych-runtime[testing]`` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterable, Sequence

import pytest
import pytest_asyncio

from psych_core import LiveChannel, LiveText

RUN = "run-1"
OTHER_RUNS = ("run-10", "run-1 ", "RUN-1", "run-é", "run/1:2", "r" * 120)
"""Run ids next to `RUN` (a suffix, a space, a case, non-ASCII, separators, a long id)."""

TEXTS = (
    "plain ascii",
    "Grüße, café, naïve",
    "日本語のテキスト",
    "مرحبا بالعالم",
    "emoji 🙂👍🏽🇫🇷 and \U0001d518\U0001d52b (outside the basic plane)",
    "e\u0301 combining, \u200b zero width, \ufeff byte order mark",
    "lines\nand\r\nand\ttabs",
    'quotes " \' and \\ backslash, {"r": "run-2", "t": "not a piece"}',
    "controls \x00 \x01 \x1b[31m \x7f",
    " spaces at both ends ",
    "x",
)
"""Texts that must arrive exactly as published."""

LONG_TEXT = "".join(f'{n:05d} Grüße 世界 🙂 "q" \\ \x01\n' for n in range(2500))
"""About 65,000 characters, many of them several bytes in UTF-8."""


def answer(
    run_id: str, parts: Sequence[str], *, attempt: int = 1, seq: int = 2, offset: int = 0
) -> list[LiveText]:
    """The pieces of one model call's answer, each starting where the one before ended."""
    pieces = []
    for text in parts:
        pieces.append(LiveText(run_id, attempt, seq, offset, text))
        offset += len(text)
    return pieces


def joined(pieces: Iterable[LiveText]) -> list[LiveText]:
    """`pieces` with each one that continues the piece before it (same run, attempt and seq,
    its offset where the one before ended) joined to it; pieces without text left out."""
    out: list[LiveText] = []
    for piece in pieces:
        if not piece.text:
            continue
        last = out[-1] if out else None
        if (
            last is not None
            and (last.run_id, last.attempt, last.seq) == (piece.run_id, piece.attempt, piece.seq)
            and piece.offset == last.offset + len(last.text)
        ):
            out[-1] = dataclasses.replace(last, text=last.text + piece.text)
        else:
            out.append(piece)
    return out


async def _next(pieces: AsyncIterator[LiveText]) -> LiveText:
    return await anext(pieces)


def _shown(pieces: Sequence[LiveText]) -> str:
    parts = [
        f"({p.run_id[:20]!r}, a{p.attempt}, s{p.seq}, o{p.offset}, {p.text[:20]!r})"
        for p in pieces[-5:]
    ]
    return f"{len(pieces)} pieces, the last: {', '.join(parts) or 'none'}"


class LiveChannelContract:
    """Every test of the live channel contract. Subclass it and implement `create_channel`.

    pytest collects the subclass (name it ``Test...``), never this class itself.

    Attributes:
        wait: seconds a test waits for a piece, or for a publish or a subscribe to finish,
            before it fails.
        burst: the most pieces a test publishes ahead of a subscriber that reads; the channel
            `create_channel` makes must hold that many for each subscriber.
        overflow: pieces published to a subscriber that never reads, to show that publishing
            does not block: more than the channel holds for a subscriber.
    """

    wait: float = 10.0
    burst: int = 200
    overflow: int = 2048

    async def create_channel(self) -> LiveChannel:
        """A fresh channel for one test: no other test publishes to or follows its runs."""
        raise NotImplementedError

    async def close_channel(self, channel: LiveChannel) -> None:
        """Release what `create_channel` made (nothing by default)."""

    @pytest_asyncio.fixture
    async def channel(self) -> AsyncIterator[LiveChannel]:
        made = await self.create_channel()
        try:
            yield made
        finally:
            await self.close_channel(made)

    @contextlib.asynccontextmanager
    async def bounded(self, what: str) -> AsyncIterator[None]:
        """Fails the test, saying `what` did not finish, once the block has taken `wait`."""
        deadline = asyncio.timeout(self.wait)
        try:
            async with deadline:
                yield
        except TimeoutError:
            if not deadline.expired():
                raise
            pytest.fail(f"{what} took over {self.wait:g} s", pytrace=False)

    @contextlib.asynccontextmanager
    async def follow(
        self, channel: LiveChannel, run_id: str
    ) -> AsyncIterator[AsyncIterator[LiveText]]:
        """``channel.subscribe(run_id)``, entering and leaving it each bounded by `wait`."""
        subscription = channel.subscribe(run_id)
        async with self.bounded(f"run {run_id!r}: subscribing"):
            pieces = await subscription.__aenter__()
        try:
            yield pieces
        except BaseException as exc:
            async with self.bounded(f"run {run_id!r}: leaving a subscription"):
                if not await subscription.__aexit__(type(exc), exc, exc.__traceback__):
                    raise
        else:
            async with self.bounded(f"run {run_id!r}: leaving a subscription"):
                await subscription.__aexit__(None, None, None)

    async def read_through(self, pieces: AsyncIterator[LiveText], last: LiveText) -> list[LiveText]:
        """The pieces `pieces` yields up to and including the end of `last` (or of the last of
        the pieces it was split into); fails the test after `wait` seconds without it."""
        key = (last.run_id, last.attempt, last.seq)
        end = last.offset + len(last.text)
        got: list[LiveText] = []
        where = f"run {last.run_id!r}: the piece at seq {last.seq}, offset {last.offset}"
        deadline = asyncio.timeout(self.wait)
        try:
            async with deadline:
                while True:
                    piece = await anext(pieces)
                    assert isinstance(piece, LiveText), f"not a LiveText: {piece!r}"
                    got.append(piece)
                    if (piece.run_id, piece.attempt, piece.seq) == key and (
                        piece.offset + len(piece.text) == end
                    ):
                        return got
        except TimeoutError:
            if not deadline.expired():
                raise
            pytest.fail(
                f"{where} did not arrive within {self.wait:g} s; arrived: {_shown(got)}",
                pytrace=False,
            )
        except StopAsyncIteration:
            pytest.fail(
                f"{where}: the subscription ended before it; arrived: {_shown(got)}",
                pytrace=False,
            )

    async def publish_all(self, channel: LiveChannel, pieces: Iterable[LiveText]) -> None:
        """Publish `pieces` one after the other; fails the test if one takes over `wait`."""
        for piece in pieces:
            where = f"run {piece.run_id!r}: publishing the piece at seq {piece.seq}"
            async with self.bounded(f"{where}, offset {piece.offset}"):
                await channel.publish(piece)

    async def expect(
        self, pieces: AsyncIterator[LiveText], published: Sequence[LiveText]
    ) -> list[LiveText]:
        """Read through the last of `published` and check that what arrived is `published`,
        in order, with every field unchanged."""
        got = await self.read_through(pieces, published[-1])
        for piece in got:
            types = [type(piece.attempt), type(piece.seq), type(piece.offset)]
            assert types == [int, int, int], f"attempt, seq, offset: {piece!r}"
            assert [type(piece.run_id), type(piece.text)] == [str, str], f"{piece!r}"
        arrived, sent = joined(got), joined(published)
        assert arrived == sent, f"arrived: {_shown(arrived)}; published: {_shown(sent)}"
        return got

    # -- delivery -----------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_it_is_a_live_channel(self, channel: LiveChannel) -> None:
        assert isinstance(channel, LiveChannel), "it has every method of the port"

    @pytest.mark.asyncio
    async def test_a_subscriber_gets_every_piece_in_publish_order(
        self, channel: LiveChannel
    ) -> None:
        words = [f"word{n} " for n in range(60)]
        first = answer(RUN, words, attempt=1, seq=2)
        retried = answer(RUN, ["Starting ", "over."], attempt=1, seq=2)  # offset 0 again
        later = answer(RUN, ["A second ", "call."], attempt=1, seq=5)
        next_attempt = answer(RUN, ["Attempt ", "two."], attempt=2, seq=5)
        published = first + retried + later + next_attempt
        async with self.follow(channel, RUN) as pieces:
            # Published before the first read: the subscription is in place once entered.
            await self.publish_all(channel, published)
            await self.expect(pieces, published)

    @pytest.mark.asyncio
    async def test_pieces_published_before_subscribing_are_not_replayed(
        self, channel: LiveChannel
    ) -> None:
        before = answer(RUN, ["said ", "before "], seq=2)
        after = answer(RUN, ["said ", "after"], seq=3)
        await self.publish_all(channel, before)
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, after)
            await self.expect(pieces, after)

    @pytest.mark.asyncio
    async def test_pieces_keep_coming_while_the_subscriber_reads(
        self, channel: LiveChannel
    ) -> None:
        published = answer(RUN, [f"{n} " for n in range(3 * self.burst)])
        async with self.follow(channel, RUN) as pieces:
            for start in range(0, len(published), self.burst // 4):
                batch = published[start : start + self.burst // 4]
                await self.publish_all(channel, batch)
                await self.expect(pieces, batch)

    @pytest.mark.asyncio
    async def test_pieces_are_read_from_another_task_than_the_one_that_subscribed(
        self, channel: LiveChannel
    ) -> None:
        published = answer(RUN, ["read ", "by ", "a ", "pump"])
        async with self.follow(channel, RUN) as pieces:
            reader = asyncio.create_task(self.expect(pieces, published))
            await asyncio.sleep(0)  # the reader waits for the first piece
            await self.publish_all(channel, published)
            await reader

    # -- runs and subscribers -----------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_a_subscriber_never_gets_another_runs_pieces(self, channel: LiveChannel) -> None:
        runs = (RUN, *OTHER_RUNS)
        sent = {run: answer(run, [f"{run[:8]}-{n} " for n in range(8)]) for run in runs}
        unfollowed = answer("run-nobody-follows", ["lost ", "words"])
        async with contextlib.AsyncExitStack() as stack:
            followers = {
                run: await stack.enter_async_context(self.follow(channel, run)) for run in runs
            }
            for n in range(8):  # interleaved: each run's pieces between the others'
                await self.publish_all(channel, [sent[run][n] for run in runs])
                await self.publish_all(channel, unfollowed[n % 2 : n % 2 + 1])
            for run in runs:
                await self.expect(followers[run], sent[run])

    @pytest.mark.asyncio
    async def test_every_subscriber_of_a_run_gets_every_piece(self, channel: LiveChannel) -> None:
        early = answer(RUN, ["for ", "the ", "first ", "two "])
        late = answer(RUN, ["for ", "all ", "three"], seq=3)
        async with self.follow(channel, RUN) as first, self.follow(channel, RUN) as second:
            await self.publish_all(channel, early)
            async with self.follow(channel, RUN) as third:
                await self.publish_all(channel, late)
                await self.expect(first, early + late)
                await self.expect(second, early + late)
                await self.expect(third, late)

    @pytest.mark.asyncio
    async def test_many_subscriptions_made_and_left_at_once_all_work(
        self, channel: LiveChannel
    ) -> None:
        runs = [f"run-{n}" for n in range(4)]
        sent = {run: answer(run, [f"{run} ", "at ", "once"]) for run in runs}
        followers = [run for run in runs for _ in range(3)]
        entered = [asyncio.Event() for _ in followers]

        async def follow(run: str, ready: asyncio.Event) -> list[LiveText]:
            async with self.follow(channel, run) as pieces:
                ready.set()
                return await self.expect(pieces, sent[run])

        async with self.bounded("subscribing at once"), asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(follow(run, ready))
                for run, ready in zip(followers, entered, strict=True)
            ]
            for ready in entered:
                await ready.wait()
            for n in range(3):
                await self.publish_all(channel, [sent[run][n] for run in runs])
        assert all(task.done() for task in tasks)
        # Every one of them left at about the same time: the run is followed anew all right.
        again = answer(runs[0], ["followed ", "again"], seq=9)
        async with self.follow(channel, runs[0]) as pieces:
            await self.publish_all(channel, again)
            await self.expect(pieces, again)

    # -- what arrives -------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_every_field_arrives_unchanged(self, channel: LiveChannel) -> None:
        published = [
            LiveText(RUN, attempt=n + 1, seq=10 * n + 3, offset=1000 * n + 7, text=text)
            for n, text in enumerate(TEXTS)
        ]
        published.append(LiveText(RUN, attempt=3, seq=2**40, offset=2**33, text="far along"))
        published.append(LiveText(RUN, attempt=1, seq=0, offset=0, text="the very start"))
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, published)
            await self.expect(pieces, published)

    @pytest.mark.asyncio
    async def test_long_text_arrives_whole_and_in_place(self, channel: LiveChannel) -> None:
        published = answer(RUN, ["Intro. ", LONG_TEXT, LONG_TEXT[::-1], "The end."], offset=3)
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, published)
            await self.expect(pieces, published)

    # -- publishing never fails or blocks -----------------------------------------------------

    @pytest.mark.asyncio
    async def test_publishing_with_no_subscriber_neither_fails_nor_blocks(
        self, channel: LiveChannel
    ) -> None:
        await self.publish_all(channel, answer(RUN, [f"{n} " for n in range(self.burst)]))
        async with self.follow(channel, "run-2") as other:
            await self.publish_all(channel, answer(RUN, ["nobody ", "follows ", "run-1"], seq=3))
            mine = answer("run-2", ["mine"])
            await self.publish_all(channel, mine)
            await self.expect(other, mine)
        async with self.follow(channel, RUN):
            pass
        await self.publish_all(channel, answer(RUN, ["followed ", "no ", "more"], seq=4))
        # And the channel still serves the run.
        heard = answer(RUN, ["heard"], seq=5)
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, heard)
            await self.expect(pieces, heard)

    @pytest.mark.asyncio
    async def test_a_subscriber_that_never_reads_does_not_block_publishing(
        self, channel: LiveChannel
    ) -> None:
        async with self.follow(channel, RUN):
            await self.publish_all(channel, answer(RUN, ["x"] * self.overflow))
            # A subscriber from now on is served (the stalled one's buffer is its own).
            heard = answer(RUN, ["still ", "heard"], seq=3)
            async with self.follow(channel, RUN) as pieces:
                await self.publish_all(channel, heard)
                await self.expect(pieces, heard)

    @pytest.mark.asyncio
    async def test_odd_pieces_neither_fail_nor_disturb_the_pieces_after_them(
        self, channel: LiveChannel
    ) -> None:
        # An empty piece, and a lone surrogate (which no log can hold: what arrives of it, if
        # anything, is up to the channel), at seq 2; the pieces around them at seq 3.
        odd = [LiveText(RUN, 1, 2, 0, ""), LiveText(RUN, 1, 2, 0, "lone \ud800 surrogate")]
        first, second = answer(RUN, ["before ", "after"], seq=3)
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, [first, *odd, second])
            got = await self.read_through(pieces, second)
        assert joined(piece for piece in got if piece.seq == 3) == joined([first, second])
        assert {piece.seq for piece in got} <= {2, 3}

    # -- leaving ------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_leaving_ends_delivery_to_that_subscriber_only(
        self, channel: LiveChannel
    ) -> None:
        both = answer(RUN, ["for ", "both "])
        after = answer(RUN, ["only ", "for ", "the ", "stayer"], seq=3)
        async with self.follow(channel, RUN) as stayer:
            async with self.follow(channel, RUN) as leaver:
                await self.publish_all(channel, both)
                await self.expect(leaver, both)
            await self.publish_all(channel, after)
            await self.expect(stayer, both + after)
        # What the left subscription's iterator does now is the channel's affair (wait, end,
        # raise), but it yields nothing published after its block was left.
        try:
            late = await asyncio.wait_for(_next(leaver), timeout=min(self.wait, 0.5))
        except Exception:  # waits (TimeoutError here), ends or raises: all fine
            return
        pytest.fail(f"a subscription yielded {late!r} after its block was left")

    @pytest.mark.asyncio
    async def test_a_run_followed_again_after_everyone_left_is_served(
        self, channel: LiveChannel
    ) -> None:
        for round_ in range(3):
            published = answer(RUN, [f"round {round_} ", "text"], seq=round_ + 2)
            async with self.follow(channel, RUN) as pieces:
                await self.publish_all(channel, published)
                await self.expect(pieces, published)

    @pytest.mark.asyncio
    async def test_overlapping_subscriptions_hand_the_run_over(self, channel: LiveChannel) -> None:
        # The first leaves while the second follows; the third joins; the second leaves.
        one, two, three = (answer(RUN, [f"part {n} ", "said"], seq=n + 2) for n in range(3))
        first = self.follow(channel, RUN)
        first_pieces = await first.__aenter__()
        async with self.follow(channel, RUN) as second_pieces:
            await self.publish_all(channel, one)
            await self.expect(first_pieces, one)
            await first.__aexit__(None, None, None)
            await self.publish_all(channel, two)
            async with self.follow(channel, RUN) as third_pieces:
                await self.expect(second_pieces, one + two)
                await self.publish_all(channel, two[-1:])  # again: the third gets only this
                await self.expect(second_pieces, two[-1:])
                await self.expect(third_pieces, two[-1:])
            await self.publish_all(channel, three)
            await self.expect(second_pieces, three)
        final = answer(RUN, ["after ", "all ", "left"], seq=9)
        async with self.follow(channel, RUN) as fourth_pieces:
            await self.publish_all(channel, final)
            await self.expect(fourth_pieces, final)

    @pytest.mark.asyncio
    async def test_leaving_with_pieces_unread_is_clean(self, channel: LiveChannel) -> None:
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, answer(RUN, [f"{n} " for n in range(20)]))
            await self.read_through(pieces, LiveText(RUN, 1, 2, 0, "0 "))
        heard = answer(RUN, ["heard"], seq=3)
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, heard)
            await self.expect(pieces, heard)

    @pytest.mark.asyncio
    async def test_leaving_while_a_reader_waits_in_another_task_is_clean(
        self, channel: LiveChannel
    ) -> None:
        # What `stream_text` does when its screen goes away: the block is left, and the task
        # that pumps the pieces is cancelled, in either order.
        for cancel_first in (False, True):
            async with self.follow(channel, RUN) as pieces:
                reader = asyncio.create_task(_next(pieces))
                await asyncio.sleep(0)  # the reader waits
                if cancel_first:
                    reader.cancel()
            if not cancel_first:
                reader.cancel()
            await asyncio.wait([reader], timeout=self.wait)
            assert reader.done(), "a cancelled reader of a subscription left stopped"
            if not reader.cancelled():
                reader.exception()  # it ended or raised as its block was left: the port allows it
            heard = answer(RUN, ["heard"], seq=3)
            async with self.follow(channel, RUN) as again:
                await self.publish_all(channel, heard)
                await self.expect(again, heard)

    @pytest.mark.asyncio
    async def test_an_error_in_the_block_propagates_and_the_block_is_left(
        self, channel: LiveChannel
    ) -> None:
        class Boom(Exception):
            pass

        async def fail_inside() -> None:
            async with self.bounded("leaving a subscription on an error"), channel.subscribe(RUN):
                raise Boom

        with pytest.raises(Boom):
            await fail_inside()
        heard = answer(RUN, ["heard"])
        async with self.follow(channel, RUN) as pieces:
            await self.publish_all(channel, heard)
            await self.expect(pieces, heard)


__all__ = ["LONG_TEXT", "OTHER_RUNS", "RUN", "TEXTS", "LiveChannelContract", "answer", "joined"]
