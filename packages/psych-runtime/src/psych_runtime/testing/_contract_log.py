"""The contract of a run's log: admission, idempotent dispatch, appends, fencing, unicode."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from psych_core import (
    Conflict,
    IdempotencyConflict,
    LeaseLost,
    Record,
    RecordTooLarge,
    RunIndex,
    RunNotFound,
    Scope,
    Store,
    StoreError,
    ToolCallFinished,
)
from psych_runtime.testing._contract_harness import (
    LEASE,
    OTHER_TENANT,
    TENANT,
    StoreHarness,
    admission,
    batch_of,
    entry,
    new_id,
    utc_now,
)


class AdmissionContract(StoreHarness):
    """`create_run`: record 0 and the run row, at once and all or nothing; idempotency keys."""

    async def test_create_run_writes_record_zero_and_a_queued_row(self, store: Store) -> None:
        before = utc_now()
        run, first = admission(parent="parent-1")
        assert await store.create_run(run, first) == (run.run_id, True)
        assert await store.read(run.run_id) == [first]
        row = await self.row(store, run.run_id)
        assert (row.run_id, row.tenant, row.agent, row.spec_version) == (
            run.run_id,
            TENANT,
            run.agent,
            run.spec_version,
        )
        assert (row.status, row.waiting, row.parent_run_id) == ("queued", None, "parent-1")
        assert (row.attempt, row.next_seq, row.inbox_last) == (0, 1, 0)
        assert (row.lease_owner, row.lease_expires_at) == (None, None)
        assert row.runnable_at is not None
        assert row.runnable_at <= utc_now(), "claimable at once"
        assert row.created_at.tzinfo is not None
        assert row.updated_at.tzinfo is not None
        assert (
            before - dt.timedelta(seconds=5)
            <= row.created_at
            <= utc_now() + dt.timedelta(seconds=5)
        )

    async def test_create_run_refuses_a_run_id_that_exists(self, store: Store) -> None:
        run, first = admission()
        await store.create_run(run, first)
        with pytest.raises(Conflict):
            await store.create_run(run, first)
        assert await store.read(run.run_id) == [first]

    async def test_create_run_refuses_a_first_record_that_is_not_seq_zero(
        self, store: Store
    ) -> None:
        run, _ = admission()
        with pytest.raises(StoreError):
            await store.create_run(run, entry(run.run_id, 1, 0))
        assert await store.get_run(TENANT, run.run_id) is None

    async def test_same_key_and_request_returns_the_first_run(self, store: Store) -> None:
        first_run, first = admission(key="order-42")
        again, again_first = admission(key="order-42")
        assert await store.create_run(first_run, first) == (first_run.run_id, True)
        assert await store.create_run(again, again_first) == (first_run.run_id, False)
        assert await store.get_run(TENANT, again.run_id) is None, "nothing new was admitted"
        assert await store.read(again.run_id) == []
        assert await store.read(first_run.run_id) == [first]

    async def test_same_key_with_another_request_is_refused(self, store: Store) -> None:
        run, first = admission(key="order-42", request="one")
        other, other_first = admission(key="order-42", request="two")
        await store.create_run(run, first)
        with pytest.raises(IdempotencyConflict) as refused:
            await store.create_run(other, other_first)
        assert refused.value.run_id == run.run_id
        assert await store.get_run(TENANT, other.run_id) is None

    async def test_keys_are_per_tenant(self, store: Store) -> None:
        mine, mine_first = admission(key="order-42", request="one")
        theirs, theirs_first = admission(key="order-42", request="two", tenant=OTHER_TENANT)
        assert await store.create_run(mine, mine_first) == (mine.run_id, True)
        assert await store.create_run(theirs, theirs_first) == (theirs.run_id, True)
        assert (await self.row(store, theirs.run_id, OTHER_TENANT)).tenant == OTHER_TENANT


class AppendContract(StoreHarness):
    """`append` and `read`: order, atomicity, conflicts, fencing, re-sent batches."""

    async def test_appends_continue_the_log_in_order(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        one = await self.append_entries(store, claim, 1)
        three = await self.append_entries(store, claim, 3)
        log = await store.read(claim.run_id)
        assert [record.seq for record in log] == [0, 1, 2, 3, 4, 5]
        assert log[1] == claim.record
        assert log[2:] == [*one.records, *three.records]
        assert await store.read(claim.run_id, after_seq=2) == list(three.records)
        assert await store.read(claim.run_id, after_seq=2, limit=2) == list(three.records[:2])
        assert await store.read(claim.run_id, after_seq=5) == []
        assert await store.read(claim.run_id, limit=1) == log[:1]

    async def test_append_sets_the_index_columns(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await self.append_entries(store, claim, 2)
        row = await self.row(store, claim.run_id)
        assert (row.status, row.waiting, row.next_seq) == ("running", None, 4)
        assert row.lease_owner == "worker-1", "a running batch keeps the lease"

    async def test_append_refuses_a_taken_seq_and_writes_nothing(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await self.append_entries(store, claim, 1)
        before = await store.read(claim.run_id)
        taken = batch_of([entry(claim.run_id, 2, 1, "late"), entry(claim.run_id, 3, 1, "late")])
        with pytest.raises(Conflict) as refused:
            await store.append(claim.run_id, 1, taken)
        assert (refused.value.run_id, refused.value.seq) == (claim.run_id, 2)
        assert await store.read(claim.run_id) == before
        assert (await self.row(store, claim.run_id)).next_seq == 3

    async def test_append_refuses_a_gap(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        with pytest.raises(Conflict):
            await store.append(claim.run_id, 1, batch_of([entry(claim.run_id, 5, 1)]))
        assert len(await store.read(claim.run_id)) == 2

    async def test_a_batch_with_one_bad_record_writes_nothing(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        run_id = claim.run_id
        not_contiguous = [entry(run_id, 2, 1), entry(run_id, 3, 1), entry(run_id, 5, 1)]
        other_run = [entry(run_id, 2, 1), entry("another-run", 3, 1)]
        too_large = [
            entry(run_id, 2, 1),
            entry(run_id, 3, 1, "a" * store.limits.max_record_bytes),
            entry(run_id, 4, 1),
        ]
        for records, error in (
            (not_contiguous, StoreError),
            (other_run, StoreError),
            (too_large, RecordTooLarge),
        ):
            with pytest.raises(error):
                await store.append(run_id, 1, batch_of(records))
            assert [record.seq for record in await store.read(run_id)] == [0, 1]
            assert (await self.row(store, run_id)).next_seq == 2

    async def test_two_appends_racing_for_one_seq_exactly_one_lands(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        mine = batch_of([entry(claim.run_id, 2, 1, "mine")])
        theirs = batch_of([entry(claim.run_id, 2, 1, "theirs")])
        results = await asyncio.gather(
            store.append(claim.run_id, 1, mine),
            store.append(claim.run_id, 1, theirs),
            return_exceptions=True,
        )
        assert sum(isinstance(result, Conflict) for result in results) == 1, results
        log = await store.read(claim.run_id)
        assert len(log) == 3
        assert log[2] in (mine.records[0], theirs.records[0])

    async def test_an_empty_batch_writes_nothing(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await store.append(claim.run_id, 1, batch_of([]))
        assert len(await store.read(claim.run_id)) == 2

    async def test_append_to_a_run_that_does_not_exist(self, store: Store) -> None:
        with pytest.raises(RunNotFound):
            await store.append("no-such-run", 1, batch_of([entry("no-such-run", 1, 1)]))
        assert await store.read("no-such-run") == []

    # -- fencing ----------------------------------------------------------------------------

    async def test_a_superseded_attempt_is_fenced(self, store: Store) -> None:
        first = await self.admit_and_claim(store, ttl=dt.timedelta(seconds=0.2))
        await asyncio.sleep(0.4)
        second = await store.claim("worker-2", LEASE, run_id=first.run_id)
        assert second is not None
        assert second.attempt == 2
        row = await self.row(store, first.run_id)
        stale = batch_of([entry(first.run_id, row.next_seq, 1)])
        with pytest.raises(LeaseLost) as lost:
            await store.append(first.run_id, 1, stale)
        assert (lost.value.run_id, lost.value.attempt) == (first.run_id, 1)
        future = batch_of([entry(first.run_id, row.next_seq, 3)])
        with pytest.raises(LeaseLost):
            await store.append(first.run_id, 3, future)
        assert (await self.row(store, first.run_id)).next_seq == row.next_seq
        await self.append_entries(store, second, 1)

    async def test_lease_lost_takes_precedence_over_conflict(self, store: Store) -> None:
        first = await self.admit_and_claim(store, ttl=dt.timedelta(seconds=0.2))
        await asyncio.sleep(0.4)
        assert await store.claim("worker-2", LEASE, run_id=first.run_id) is not None
        # seq 1 is taken (by AttemptStarted): a conflict too, but the fence speaks first.
        with pytest.raises(LeaseLost):
            await store.append(first.run_id, 1, batch_of([entry(first.run_id, 1, 1)]))

    # -- re-sent batches --------------------------------------------------------------------

    async def test_a_re_sent_batch_is_written_once(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        batch = await self.append_entries(store, claim, 2)
        result = await store.append(claim.run_id, 1, batch)
        assert result.inbox_last == 0
        log = await store.read(claim.run_id)
        assert log[2:] == list(batch.records)
        assert (await self.row(store, claim.run_id)).next_seq == 4

    async def test_a_re_sent_batch_succeeds_after_later_batches(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        early = await self.append_entries(store, claim, 1)
        later = await self.append_entries(store, claim, 2)
        await store.append(claim.run_id, 1, early)
        assert await store.read(claim.run_id, after_seq=1) == [*early.records, *later.records]

    async def test_a_re_sent_final_batch_succeeds_after_the_lease_is_gone(
        self, store: Store
    ) -> None:
        claim = await self.admit_and_claim(store)
        final = await self.append_entries(store, claim, 1, index=RunIndex(status="completed"))
        await store.append(claim.run_id, 1, final)
        assert len(await store.read(claim.run_id)) == 3

    async def test_a_re_sent_batch_from_a_superseded_attempt_is_lease_lost(
        self, store: Store
    ) -> None:
        first = await self.admit_and_claim(store, ttl=dt.timedelta(seconds=0.2))
        batch = await self.append_entries(store, first, 1)
        await asyncio.sleep(0.4)
        assert await store.claim("worker-2", LEASE, run_id=first.run_id) is not None
        with pytest.raises(LeaseLost):
            await store.append(first.run_id, 1, batch)

    async def test_a_batch_id_names_the_batch_at_its_first_seq(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await store.append(claim.run_id, 1, batch_of([entry(claim.run_id, 2, 1)], batch_id="b"))
        # The same id on records that start elsewhere is another batch: written at the next seq,
        # or refused when its first seq is taken by a batch with another id.
        moved = batch_of([entry(claim.run_id, 3, 1, "moved")], batch_id="b")
        await store.append(claim.run_id, 1, moved)
        assert (await store.read(claim.run_id, after_seq=2)) == list(moved.records)
        with pytest.raises(Conflict):
            await store.append(claim.run_id, 1, batch_of([entry(claim.run_id, 2, 1)]))


class UnicodeContract(StoreHarness):
    """Every string a store keeps comes back exactly: emoji, right-to-left, astral planes."""

    TEXTS = (
        "emoji 👩🏽‍🚀🚀 and flags 🇫🇷🏳️‍🌈",
        "right to left: مرحبا بالعالم שלום עולם",
        "astral \U0001d518\U0001d52b\U0001d526 \U0002070e\U00020731 and combining é ñ a\u0301",
        "quotes \" ' \\ and separators \u2028 \u2029 \t \r\n",
        "ascii",
    )

    async def test_unicode_round_trips(self, store: Store) -> None:
        tenant = "tenant-ü-🌍"
        for text in self.TEXTS:
            run, first = admission(
                tenant=tenant, key=f"key {text}", agent=f"agent {text}", input=text
            )
            await store.create_run(run, first)
            claim = await store.claim(f"worker {text}", LEASE, run_id=run.run_id)
            assert claim is not None
            record = Record(
                run_id=run.run_id,
                seq=2,
                attempt=1,
                at=utc_now(),
                body=ToolCallFinished(call_id="2.0", result={text: [text, {"nested": text}]}),
            )
            await store.append(run.run_id, 1, batch_of([record]))
            assert await store.read(run.run_id) == [first, claim.record, record]
            row = await self.row(store, run.run_id, tenant)
            assert (row.agent, row.lease_owner) == (f"agent {text}", f"worker {text}")
            again, again_first = admission(tenant=tenant, key=f"key {text}", input=text)
            assert await store.create_run(again, again_first) == (run.run_id, False)
            await store.put_spec(f"sha256:{text}", f'{{"name": "{text}"}}')
            assert await store.get_spec(f"sha256:{text}") == f'{{"name": "{text}"}}'
        page = await store.scoped(Scope(tenant=tenant)).list_runs()
        assert {row.agent for row in page.items} == {f"agent {text}" for text in self.TEXTS}

    async def test_the_run_id_itself_may_be_any_text(self, store: Store) -> None:
        run_id = new_id("run-🌍-مرحبا")
        run, first = admission(run_id)
        await store.create_run(run, first)
        assert await store.read(run_id) == [first]
        assert (await self.row(store, run_id)).run_id == run_id
