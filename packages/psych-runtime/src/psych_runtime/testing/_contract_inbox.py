"""The inbox part of the store contract: signals numbered in commit order, single-use keys,
wake-ups, notices written by appends, and no signal lost to a suspend."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from psych_core import (
    CONTINUED_KEY,
    Approve,
    Cancel,
    ChildEnded,
    Continued,
    DuplicateSignal,
    InboxPending,
    Notify,
    Resume,
    RunFinished,
    RunIndex,
    RunNotFound,
    Signal,
    Store,
    UserInput,
)
from psych_runtime.testing._contract_harness import (
    AFTER_SHORT_LEASE,
    LEASE,
    OTHER_TENANT,
    SHORT_LEASE,
    TENANT,
    StoreHarness,
    batch_of,
    entry,
    utc_now,
)

WAITING = RunIndex(status="waiting", waiting="approval")


class InboxContract(StoreHarness):
    """`signal`, `signals`, `due`, and the inbox rules of `append`."""

    async def test_signals_are_numbered_in_order_and_read_back_exactly(self, store: Store) -> None:
        run_id = await self.admit(store)
        sent: list[Signal] = [
            Approve(call_id="2.0", by="ana", note="ok ✓", arguments={"amount": 120}),
            UserInput(text="also check B2 🙂"),
            Resume(payload={"tracking": ["1Z", None, 3.5]}),
            Cancel(reason="customer left", by="ops"),
        ]
        numbers = [
            await store.signal(TENANT, run_id, signal, f"key-{index}")
            for index, signal in enumerate(sent)
        ]
        assert numbers == [1, 2, 3, 4]
        entries = await store.signals(run_id)
        assert [(e.number, e.key, e.signal) for e in entries] == [
            (n, f"key-{i}", s) for i, (n, s) in enumerate(zip(numbers, sent, strict=True))
        ]
        assert all(e.run_id == run_id for e in entries)
        assert [e.number for e in await store.signals(run_id, after=2)] == [3, 4]
        assert await store.signals(run_id, after=4) == []
        assert (await self.row(store, run_id)).inbox_last == 4

    async def test_concurrent_signals_get_distinct_numbers_in_commit_order(
        self, store: Store
    ) -> None:
        run_id = await self.admit(store)
        numbers = await asyncio.gather(
            *(store.signal(TENANT, run_id, UserInput(text=str(i)), f"k{i}") for i in range(20))
        )
        assert sorted(numbers) == list(range(1, 21))
        entries = await store.signals(run_id)
        assert [e.number for e in entries] == list(range(1, 21))
        by_number = {e.number: e.key for e in entries}
        assert all(by_number[n] == f"k{i}" for i, n in enumerate(numbers))

    async def test_a_repeated_key_is_refused_for_the_life_of_the_run(self, store: Store) -> None:
        run_id = await self.admit(store)
        other = await self.admit(store)
        await store.signal(TENANT, run_id, Approve(call_id="2.0", by="ana"), "approval:2.0")
        with pytest.raises(DuplicateSignal) as refused:
            await store.signal(TENANT, run_id, Approve(call_id="2.0", by="bo"), "approval:2.0")
        assert refused.value.run_id == run_id
        assert refused.value.key == "approval:2.0"
        assert len(await store.signals(run_id)) == 1
        # Keys belong to one run: another run may use the same key.
        assert await store.signal(TENANT, other, Resume(), "approval:2.0") == 1

    async def test_two_decisions_racing_on_one_key_exactly_one_wins(self, store: Store) -> None:
        for _ in range(10):
            run_id = await self.admit(store)
            results = await asyncio.gather(
                store.signal(TENANT, run_id, Approve(call_id="2.0", by="a"), "approval:2.0"),
                store.signal(TENANT, run_id, Approve(call_id="2.0", by="b"), "approval:2.0"),
                return_exceptions=True,
            )
            assert sorted(type(r).__name__ for r in results) == ["DuplicateSignal", "int"]
            assert len(await store.signals(run_id)) == 1

    async def test_signals_to_ended_or_unseen_runs_are_refused(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await self.append_entries(store, claim, 1, index=RunIndex(status="completed"))
        with pytest.raises(RunFinished) as ended:
            await store.signal(TENANT, claim.run_id, Resume(), "late")
        assert ended.value.status == "completed"
        with pytest.raises(RunNotFound):
            await store.signal(TENANT, "no-such-run", Resume(), "k")
        run_id = await self.admit(store)
        with pytest.raises(RunNotFound):
            await store.signal(OTHER_TENANT, run_id, Resume(), "k")
        assert await store.signals(run_id) == []
        assert await store.signals("no-such-run") == []

    async def test_an_ended_run_takes_messages_for_its_next_run_until_it_is_continued(
        self, store: Store
    ) -> None:
        claim = await self.admit_and_claim(store)
        run_id = claim.run_id
        await self.append_entries(store, claim, 1, index=RunIndex(status="cancelled"))
        before = await self.row(store, run_id)
        kept = await store.signal(TENANT, run_id, UserInput(text="p.s.", queue="next_run"), "m1")
        assert kept == before.inbox_last + 1
        for refused in (
            UserInput(text="steer"),
            UserInput(text="later", queue="follow_up"),
            Resume(),
            Cancel(),
        ):
            with pytest.raises(RunFinished):
                await store.signal(TENANT, run_id, refused, f"no-{refused.kind}")
        with pytest.raises(RunNotFound):
            await store.signal(OTHER_TENANT, run_id, UserInput(text="x", queue="next_run"), "x")
        mark = await store.signal(TENANT, run_id, Continued(continuation="next"), CONTINUED_KEY)
        assert mark == kept + 1
        with pytest.raises(DuplicateSignal):
            await store.signal(TENANT, run_id, Continued(continuation="other"), CONTINUED_KEY)
        with pytest.raises(RunFinished):
            await store.signal(TENANT, run_id, UserInput(text="too late", queue="next_run"), "m2")
        entries = await store.signals(run_id, before.inbox_last)
        assert [(e.number, e.key) for e in entries] == [(kept, "m1"), (mark, CONTINUED_KEY)]
        assert entries[0].signal == UserInput(text="p.s.", queue="next_run")
        after = await self.row(store, run_id)
        assert (after.status, after.runnable_at, after.lease_owner, after.next_seq) == (
            before.status,
            before.runnable_at,
            before.lease_owner,
            before.next_seq,
        )
        assert run_id not in [row.run_id for row in await store.due(utc_now(), 100)]
        # A key already used is refused as such, whether or not the run still takes signals.
        for again in (Resume(), UserInput(text="again", queue="next_run")):
            with pytest.raises(DuplicateSignal):
                await store.signal(TENANT, run_id, again, "m1")

    async def test_a_message_racing_the_continued_mark_lands_before_it_or_is_refused(
        self, store: Store
    ) -> None:
        claim = await self.admit_and_claim(store)
        run_id = claim.run_id
        await self.append_entries(store, claim, 1, index=RunIndex(status="completed"))

        async def send(index: int) -> int | None:
            message = UserInput(text=f"m{index}", queue="next_run")
            try:
                return await store.signal(TENANT, run_id, message, f"m{index}")
            except RunFinished:
                return None

        sends = [send(index) for index in range(16)]
        mark = store.signal(TENANT, run_id, Continued(continuation="next"), CONTINUED_KEY)
        results = await asyncio.gather(*sends[:8], mark, *sends[8:])
        marked = results[8]
        assert marked is not None
        kept = [number for number in results[:8] + results[9:] if number is not None]
        assert all(number < marked for number in kept), (kept, marked)
        entries = await store.signals(run_id)
        assert sorted(e.number for e in entries if e.key != CONTINUED_KEY) == sorted(kept)

    async def test_a_signal_wakes_a_waiting_run(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await self.append_entries(store, claim, 1, index=WAITING)
        assert await store.claim("worker-2", LEASE) is None
        await store.signal(TENANT, claim.run_id, Approve(call_id="2.0", by="ana"), "a")
        woken = await store.claim("worker-2", LEASE)
        assert woken is not None
        assert (woken.run_id, woken.attempt) == (claim.run_id, 2)

    async def test_a_signal_wakes_a_timed_wait_before_its_due_time(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        later = utc_now() + dt.timedelta(hours=1)
        index = RunIndex(status="waiting", waiting="external", due_at=later)
        await self.append_entries(store, claim, 1, index=index)
        assert await store.claim("worker-2", LEASE) is None
        await store.signal(TENANT, claim.run_id, Resume(payload=1), "r")
        assert await store.claim("worker-2", LEASE) is not None

    async def test_a_leased_run_hears_of_signals_through_renew_and_append(
        self, store: Store
    ) -> None:
        claim = await self.admit_and_claim(store)
        await store.signal(TENANT, claim.run_id, UserInput(text="hi"), "u1")
        # The lease still holds: the signal does not make the run claimable by another worker.
        assert await store.claim("worker-2", LEASE) is None
        assert (await store.renew(claim.run_id, claim.attempt, LEASE)).inbox_last == 1
        await store.signal(TENANT, claim.run_id, UserInput(text="again"), "u2")
        seq = (await self.row(store, claim.run_id)).next_seq
        result = await store.append(
            claim.run_id, claim.attempt, batch_of([entry(claim.run_id, seq, claim.attempt)])
        )
        assert result.inbox_last == 2

    async def test_an_append_that_suspends_or_ends_is_refused_while_entries_are_unseen(
        self, store: Store
    ) -> None:
        for index in (WAITING, RunIndex(status="completed")):
            claim = await self.admit_and_claim(store)
            await store.signal(TENANT, claim.run_id, Cancel(reason="stop"), "c")
            seq = (await self.row(store, claim.run_id)).next_seq
            records = [entry(claim.run_id, seq, claim.attempt)]
            with pytest.raises(InboxPending) as pending:
                await store.append(
                    claim.run_id, claim.attempt, batch_of(records, index=index, inbox_seen=0)
                )
            assert (pending.value.seen, pending.value.inbox_last) == (0, 1)
            row = await self.row(store, claim.run_id)
            assert (row.next_seq, row.status, row.lease_owner) == (seq, "running", "worker-1")
            # A step that neither suspends nor ends goes through; so does one that saw it all.
            await store.append(claim.run_id, claim.attempt, batch_of(records, inbox_seen=0))
            records = [entry(claim.run_id, seq + 1, claim.attempt)]
            await store.append(
                claim.run_id, claim.attempt, batch_of(records, index=index, inbox_seen=1)
            )
            assert (await self.row(store, claim.run_id)).status == index.status

    async def test_no_signal_is_lost_to_a_racing_suspend(self, store: Store) -> None:
        for trial in range(25):
            claim = await self.admit_and_claim(store)
            seq = (await self.row(store, claim.run_id)).next_seq
            suspend = batch_of([entry(claim.run_id, seq, claim.attempt)], index=WAITING)
            results = await asyncio.gather(
                store.append(claim.run_id, claim.attempt, suspend),
                store.signal(TENANT, claim.run_id, Approve(call_id="2.0", by="a"), f"t{trial}"),
                return_exceptions=True,
            )
            appended, signalled = results
            assert signalled == 1, signalled
            row = await self.row(store, claim.run_id)
            if isinstance(appended, InboxPending):
                # Refused: the worker still holds the run and will move the signal in.
                assert (row.status, row.lease_owner) == ("running", "worker-1")
            else:
                assert not isinstance(appended, BaseException), appended
                # Suspended first, then woken by the signal: claimable at once.
                assert row.status == "waiting"
                assert row.runnable_at is not None
                assert row.runnable_at <= utc_now()

    async def test_an_append_writes_its_notices_into_other_inboxes(self, store: Store) -> None:
        parent = await self.admit_and_claim(store)
        await self.append_entries(
            store, parent, 1, index=RunIndex(status="waiting", waiting="children")
        )
        child = await self.admit_and_claim(store)
        seq = (await self.row(store, child.run_id)).next_seq
        notice = Notify(
            run_id=parent.run_id,
            key=f"child:{child.run_id}",
            signal=ChildEnded(child_run_id=child.run_id, call_id="2.0", status="completed"),
        )
        batch = batch_of(
            [entry(child.run_id, seq, child.attempt)],
            index=RunIndex(status="completed"),
            notify=[notice],
        )
        await store.append(child.run_id, child.attempt, batch)
        entries = await store.signals(parent.run_id)
        assert [(e.number, e.key, e.signal) for e in entries] == [(1, notice.key, notice.signal)]
        # The parent was waiting: the notice woke it.
        woken = await store.claim("worker-2", LEASE)
        assert woken is not None
        assert woken.run_id == parent.run_id
        # A re-sent batch writes its notices once.
        await store.append(child.run_id, child.attempt, batch)
        assert len(await store.signals(parent.run_id)) == 1

    async def test_notices_that_no_longer_apply_are_skipped_not_errors(self, store: Store) -> None:
        ended = await self.admit_and_claim(store)
        await self.append_entries(store, ended, 1, index=RunIndex(status="cancelled"))
        target = await self.admit(store)
        await store.signal(TENANT, target, Resume(), "taken")
        sender = await self.admit_and_claim(store)
        seq = (await self.row(store, sender.run_id)).next_seq
        batch = batch_of(
            [entry(sender.run_id, seq, sender.attempt)],
            notify=[
                Notify(run_id=ended.run_id, key="n1", signal=Cancel()),
                Notify(run_id=target, key="taken", signal=Cancel()),
                Notify(run_id="no-such-run", key="n3", signal=Cancel()),
            ],
        )
        await store.append(sender.run_id, sender.attempt, batch)
        assert (await self.row(store, sender.run_id)).next_seq == seq + 1
        assert await store.signals(ended.run_id) == []
        assert len(await store.signals(target)) == 1

    async def test_due_lists_waiting_runs_whose_time_has_come(self, store: Store) -> None:
        soon = await self.admit_and_claim(store)
        due_at = utc_now() + SHORT_LEASE
        await self.append_entries(
            store, soon, 1, index=RunIndex(status="waiting", waiting="external", due_at=due_at)
        )
        later = await self.admit_and_claim(store, tenant=OTHER_TENANT)
        await self.append_entries(
            store,
            later,
            1,
            index=RunIndex(
                status="waiting", waiting="external", due_at=utc_now() + dt.timedelta(hours=1)
            ),
        )
        person = await self.admit_and_claim(store)
        await self.append_entries(store, person, 1, index=WAITING)
        await self.admit_and_claim(store)  # running: never due
        assert await store.due(utc_now()) == []
        await asyncio.sleep(AFTER_SHORT_LEASE)
        assert [row.run_id for row in await store.due(utc_now())] == [soon.run_id]
        # A woken run is due at once; `due` spans tenants.
        await store.signal(OTHER_TENANT, later.run_id, Resume(), "r")
        ids = {row.run_id for row in await store.due(utc_now())}
        assert ids == {soon.run_id, later.run_id}
        assert len(await store.due(utc_now(), limit=1)) == 1

    async def test_suspending_resets_the_claims_that_max_attempts_counts(
        self, store: Store
    ) -> None:
        run_id = await self.admit(store)
        for round_ in range(3):
            for _ in range(2):
                claim = await store.claim("w", SHORT_LEASE, run_id=run_id, max_attempts=2)
                assert claim is not None, f"round {round_}: the run was failed"
                await asyncio.sleep(AFTER_SHORT_LEASE)
            claim = await store.claim("w", LEASE, run_id=run_id, max_attempts=3)
            assert claim is not None
            row = await self.row(store, run_id)
            suspend = batch_of(
                [entry(run_id, row.next_seq, claim.attempt)],
                index=WAITING,
                inbox_seen=row.inbox_last,
            )
            await store.append(run_id, claim.attempt, suspend)
            assert (await self.row(store, run_id)).claims == 0
            await store.signal(TENANT, run_id, Resume(), f"wake-{round_}")
        row = await self.row(store, run_id)
        assert row.status == "waiting"

    async def test_deleting_a_run_deletes_its_inbox(self, store: Store) -> None:
        run_id = await self.admit(store)
        await store.signal(TENANT, run_id, Resume(), "k")
        assert await store.delete_run(TENANT, run_id)
        assert await store.signals(run_id) == []
