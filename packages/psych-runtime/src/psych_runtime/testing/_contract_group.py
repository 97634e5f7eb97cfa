"""`append_many`: several runs' batches committed together, each judged as if alone."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from psych_core import (
    Append,
    AppendResult,
    Cancel,
    Claim,
    Conflict,
    InboxPending,
    LeaseLost,
    Notify,
    RecordTooLarge,
    Resume,
    RunIndex,
    RunNotFound,
    Store,
)
from psych_runtime.testing._contract_harness import (
    LEASE,
    TENANT,
    StoreHarness,
    batch_of,
    entry,
)


class GroupCommitContract(StoreHarness):
    """`append_many`: every append of a group is judged and written exactly as `append` would
    judge and write it alone; a refusal refuses only its own append."""

    async def next_append(
        self, store: Store, claim: Claim, count: int = 1, *, index: RunIndex | None = None
    ) -> Append:
        """An `Append` of `count` records at the run's next seq, from the claim's attempt."""
        start = (await self.row(store, claim.run_id, claim.tenant)).next_seq
        records = [
            entry(claim.run_id, seq, claim.attempt, f"group {seq}")
            for seq in range(start, start + count)
        ]
        batch = batch_of(records) if index is None else batch_of(records, index=index)
        return Append(claim.run_id, claim.attempt, batch)

    async def test_a_group_commits_every_run_in_order(self, store: Store) -> None:
        claims = [await self.admit_and_claim(store) for _ in range(5)]
        appends = [
            await self.next_append(store, claim, count)
            for claim, count in zip(claims, (1, 3, 1, 2, 1), strict=True)
        ]
        done = await self.next_append(store, claims[4], index=RunIndex(status="completed"))
        appends[4] = done
        outcomes = await store.append_many(appends)
        assert outcomes == [AppendResult(0)] * 5
        for one in appends:
            log = await store.read(one.run_id)
            assert log[2:] == list(one.batch.records), one.run_id
            row = await self.row(store, one.run_id)
            assert row.next_seq == 2 + len(one.batch.records)
        ended = await self.row(store, done.run_id)
        assert (ended.status, ended.lease_owner) == ("completed", None)
        assert (await self.row(store, appends[0].run_id)).lease_owner == "worker-1"

    async def test_an_empty_group_does_nothing(self, store: Store) -> None:
        assert await store.append_many([]) == []

    async def test_a_group_naming_a_run_twice_is_refused_before_writing(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        first = await self.next_append(store, claim)
        second = Append(
            claim.run_id, claim.attempt, batch_of([entry(claim.run_id, 3, claim.attempt)])
        )
        with pytest.raises(ValueError, match=claim.run_id):
            await store.append_many([first, second])
        assert len(await store.read(claim.run_id)) == 2

    async def test_a_fenced_append_refuses_only_itself(self, store: Store) -> None:
        before = await self.admit_and_claim(store)
        stale = await self.admit_and_claim(store, ttl=dt.timedelta(seconds=0.2))
        await asyncio.sleep(0.4)
        assert await store.claim("worker-2", LEASE, run_id=stale.run_id) is not None
        after = await self.admit_and_claim(store)
        group = [
            await self.next_append(store, before),
            await self.next_append(store, stale),
            await self.next_append(store, after, 2),
        ]
        stale_log = await store.read(stale.run_id)
        outcomes = await store.append_many(group)
        assert outcomes[0] == AppendResult(0)
        assert isinstance(outcomes[1], LeaseLost), outcomes[1]
        assert (outcomes[1].run_id, outcomes[1].attempt) == (stale.run_id, 1)
        assert outcomes[2] == AppendResult(0)
        assert await store.read(stale.run_id) == stale_log
        for one in (group[0], group[2]):
            assert (await store.read(one.run_id))[2:] == list(one.batch.records)

    async def test_each_refusal_is_the_one_append_would_give(self, store: Store) -> None:
        taken, gap, large, good, other_good = [await self.admit_and_claim(store) for _ in range(5)]
        limit = store.limits.max_record_bytes
        group = [
            await self.next_append(store, good),
            Append(taken.run_id, 1, batch_of([entry(taken.run_id, 1, 1, "taken")])),
            Append(gap.run_id, 1, batch_of([entry(gap.run_id, 7, 1)])),
            Append(large.run_id, 1, batch_of([entry(large.run_id, 2, 1, "a" * limit)])),
            Append("no-such-run", 1, batch_of([entry("no-such-run", 1, 1)])),
            await self.next_append(store, other_good, 3),
        ]
        outcomes = await store.append_many(group)
        assert outcomes[0] == AppendResult(0)
        assert isinstance(outcomes[1], Conflict), outcomes[1]
        assert (outcomes[1].run_id, outcomes[1].seq) == (taken.run_id, 1)
        assert isinstance(outcomes[2], Conflict), outcomes[2]
        assert isinstance(outcomes[3], RecordTooLarge), outcomes[3]
        assert isinstance(outcomes[4], RunNotFound), outcomes[4]
        assert outcomes[5] == AppendResult(0)
        for claim in (taken, gap, large):
            assert len(await store.read(claim.run_id)) == 2, claim.run_id
            assert (await self.row(store, claim.run_id)).next_seq == 2
        assert (await store.read(good.run_id))[2:] == list(group[0].batch.records)
        assert (await store.read(other_good.run_id))[2:] == list(group[5].batch.records)

    async def test_a_closing_append_behind_the_inbox_refuses_only_itself(
        self, store: Store
    ) -> None:
        signalled, plain = await self.admit_and_claim(store), await self.admit_and_claim(store)
        await store.signal(TENANT, signalled.run_id, Cancel(reason="stop"), "c")
        group = [
            await self.next_append(store, signalled, index=RunIndex(status="completed")),
            await self.next_append(store, plain, index=RunIndex(status="completed")),
        ]
        outcomes = await store.append_many(group)
        assert isinstance(outcomes[0], InboxPending), outcomes[0]
        assert (outcomes[0].seen, outcomes[0].inbox_last) == (0, 1)
        assert outcomes[1] == AppendResult(0)
        row = await self.row(store, signalled.run_id)
        assert (row.status, row.next_seq, row.lease_owner) == ("running", 2, "worker-1")
        assert (await self.row(store, plain.run_id)).status == "completed"

    async def test_each_outcome_carries_its_own_inbox(self, store: Store) -> None:
        quiet, signalled = await self.admit_and_claim(store), await self.admit_and_claim(store)
        await store.signal(TENANT, signalled.run_id, Resume(), "one")
        await store.signal(TENANT, signalled.run_id, Resume(), "two")
        group = [await self.next_append(store, quiet), await self.next_append(store, signalled)]
        assert await store.append_many(group) == [AppendResult(0), AppendResult(2)]

    async def test_a_re_sent_group_writes_each_batch_once(self, store: Store) -> None:
        claims = [await self.admit_and_claim(store) for _ in range(3)]
        group = [await self.next_append(store, claim, 2) for claim in claims]
        assert await store.append_many(group) == [AppendResult(0)] * 3
        assert await store.append_many(group) == [AppendResult(0)] * 3
        for one in group:
            assert (await store.read(one.run_id))[2:] == list(one.batch.records)

    async def test_notices_in_a_group_are_delivered_once(self, store: Store) -> None:
        target = await self.admit(store)
        sender, other = await self.admit_and_claim(store), await self.admit_and_claim(store)
        seq = (await self.row(store, sender.run_id)).next_seq
        notice = Notify(run_id=target, key="from-sender", signal=Cancel(reason="told"))
        with_notice = Append(
            sender.run_id,
            sender.attempt,
            batch_of([entry(sender.run_id, seq, sender.attempt)], notify=[notice]),
        )
        group = [with_notice, await self.next_append(store, other)]
        assert await store.append_many(group) == [AppendResult(0)] * 2
        assert await store.append_many(group) == [AppendResult(0)] * 2
        entries = await store.signals(target)
        assert [(e.key, e.signal) for e in entries] == [(notice.key, notice.signal)]

    async def test_two_groups_racing_for_one_seq_exactly_one_lands(self, store: Store) -> None:
        shared = await self.admit_and_claim(store)
        mine_only, theirs_only = (
            await self.admit_and_claim(store),
            await self.admit_and_claim(store),
        )
        mine = [
            Append(shared.run_id, 1, batch_of([entry(shared.run_id, 2, 1, "mine")])),
            await self.next_append(store, mine_only),
        ]
        theirs = [
            Append(shared.run_id, 1, batch_of([entry(shared.run_id, 2, 1, "theirs")])),
            await self.next_append(store, theirs_only),
        ]
        first, second = await asyncio.gather(store.append_many(mine), store.append_many(theirs))
        shared_outcomes = [first[0], second[0]]
        assert sum(isinstance(outcome, Conflict) for outcome in shared_outcomes) == 1, (
            shared_outcomes
        )
        assert AppendResult(0) in shared_outcomes
        assert (first[1], second[1]) == (AppendResult(0), AppendResult(0))
        log = await store.read(shared.run_id)
        assert len(log) == 3
        assert log[2] in (mine[0].batch.records[0], theirs[0].batch.records[0])
        for one in (mine[1], theirs[1]):
            assert (await store.read(one.run_id))[2:] == list(one.batch.records)
