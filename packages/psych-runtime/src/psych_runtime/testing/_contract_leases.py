"""The contract of claims and leases: who runs a run, for how long, and how many times."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from psych_core import (
    AttemptStarted,
    Batch,
    Claim,
    LeaseLost,
    RunFailed,
    RunIndex,
    RunNotFound,
    Store,
    UserInput,
)
from psych_runtime.testing._contract_harness import (
    AFTER_SHORT_LEASE,
    LEASE,
    SHORT_LEASE,
    TENANT,
    StoreHarness,
    admission,
    batch_of,
    entry,
    utc_now,
)

RACE_TRIALS = 50


class ClaimContract(StoreHarness):
    """`claim`: a run whose lease expired first, else the oldest runnable run; one winner;
    `AttemptStarted` written by the claim."""

    async def test_claim_starts_an_attempt(self, store: Store) -> None:
        run_id = await self.admit(store)
        before = utc_now()
        claim = await store.claim("worker-1", LEASE)
        assert claim is not None
        assert (claim.run_id, claim.tenant, claim.attempt) == (run_id, TENANT, 1)
        assert claim.record.seq == 1
        assert claim.record.attempt == 1
        assert claim.record.body == AttemptStarted(worker_id="worker-1")
        log = await store.read(run_id)
        assert [record.seq for record in log] == [0, 1]
        assert log[1] == claim.record, "the claim returns the record it wrote"
        slack = dt.timedelta(seconds=5)
        assert before + LEASE - slack <= claim.lease_expires_at <= utc_now() + LEASE + slack
        row = await self.row(store, run_id)
        assert (row.status, row.attempt, row.lease_owner, row.next_seq) == (
            "running",
            1,
            "worker-1",
            2,
        )
        assert row.lease_expires_at == claim.lease_expires_at
        assert row.runnable_at == claim.lease_expires_at, "runnable_at is the lease expiry"

    async def test_the_claim_says_the_last_inbox_entry_it_found(self, store: Store) -> None:
        # An attempt whose claim says its inbox holds nothing new does not read it first.
        run_id = await self.admit(store)
        first = await store.claim("worker-1", LEASE)
        assert first is not None
        assert first.run_id == run_id
        assert first.inbox_last == 0, "a run nobody signalled: its claim must say 0"
        await store.signal(TENANT, run_id, UserInput(text="one"), "key-1")
        await store.signal(TENANT, run_id, UserInput(text="two"), "key-2")
        await store.release(run_id, first.attempt)
        again = await store.claim("worker-2", LEASE, run_id=run_id)
        assert again is not None
        assert again.inbox_last == 2, "the claim must say the last inbox entry it found"
        await store.signal(TENANT, run_id, UserInput(text="three"), "key-3")
        await store.release(run_id, again.attempt)
        third = await store.claim("worker-3", LEASE)
        assert third is not None
        assert third.inbox_last == 3

    async def test_a_claim_that_brings_the_log_brings_it_exactly(self, store: Store) -> None:
        # An attempt folds `claim.log` and the claim's record instead of reading its log:
        # they must be the log, record for record. None is always allowed.
        run_id = await self.admit(store)
        first = await store.claim("worker-1", LEASE)
        assert first is not None
        if first.log is not None:
            assert [*first.log, first.record] == await store.read(run_id)
        await store.append(run_id, 1, batch_of([entry(run_id, 2, 1)]))
        await store.release(run_id, first.attempt)
        for given in (None, run_id):  # any run, then this one, each a later attempt
            again = await store.claim("worker-2", LEASE, run_id=given)
            assert again is not None
            assert again.run_id == run_id
            if again.log is not None:
                assert [*again.log, again.record] == await store.read(run_id)
            await store.release(run_id, again.attempt)

    async def test_nothing_runnable_claims_nothing(self, store: Store) -> None:
        assert await store.claim("worker-1", LEASE) is None
        await self.admit_and_claim(store)
        assert await store.claim("worker-2", LEASE) is None

    async def test_the_oldest_runnable_run_is_claimed_first(self, store: Store) -> None:
        first, second, third = [await self.admit(store) for _ in range(3)]
        claims = [await store.claim(f"worker-{i}", LEASE) for i in range(3)]
        assert [claim.run_id for claim in claims if claim] == [first, second, third]
        # Released to times in the past: the earlier time goes first, and a run claimable
        # "at once" (the smallest time) before both.
        await store.release(second, 1, utc_now() - dt.timedelta(seconds=20))
        await store.release(first, 1, utc_now() - dt.timedelta(seconds=10))
        await store.release(third, 1)
        order = [await store.claim("worker-9", LEASE) for _ in range(3)]
        assert [claim.run_id for claim in order if claim] == [third, second, first]

    async def test_a_run_whose_lease_expired_is_claimed_before_the_rest(self, store: Store) -> None:
        # Its worker died with the run started: it is taken before every run admitted while
        # it ran (which are claimable "at once"), not after them, so a crashed run does not
        # wait behind a queue.
        crashed = await self.admit_and_claim(store, ttl=SHORT_LEASE)
        queued = [await self.admit(store) for _ in range(3)]
        await asyncio.sleep(AFTER_SHORT_LEASE)
        order = [await store.claim("worker-2", LEASE) for _ in range(4)]
        assert [claim.run_id for claim in order if claim] == [crashed.run_id, *queued]
        assert order[0] is not None
        assert order[0].attempt == 2, "the crashed run's next attempt"

    async def test_claim_with_a_run_id_takes_only_that_run(self, store: Store) -> None:
        older = await self.admit(store)
        newer = await self.admit(store)
        claim = await store.claim("worker-1", LEASE, run_id=newer)
        assert claim is not None
        assert claim.run_id == newer
        assert await store.claim("worker-2", LEASE, run_id=newer) is None, "it is leased"
        assert await store.claim("worker-2", LEASE, run_id="no-such-run") is None
        assert (await self.row(store, older)).status == "queued"

    async def test_attempt_numbers_have_no_gaps(self, store: Store) -> None:
        run_id = await self.admit(store)
        for attempt in (1, 2, 3):
            claim = await store.claim(f"worker-{attempt}", LEASE, run_id=run_id)
            assert claim is not None
            assert claim.attempt == attempt
            await store.release(run_id, attempt)
        log = await store.read(run_id)
        assert [(r.seq, r.attempt) for r in log] == [(0, 0), (1, 1), (2, 2), (3, 3)]
        assert [r.body for r in log[1:]] == [
            AttemptStarted(worker_id=f"worker-{attempt}") for attempt in (1, 2, 3)
        ]

    async def test_the_claim_takes_the_next_seq_after_appends(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await self.append_entries(store, claim, 3)
        await store.release(claim.run_id, 1)
        again = await store.claim("worker-2", LEASE)
        assert again is not None
        assert (again.attempt, again.record.seq) == (2, 5)

    async def test_two_claimers_racing_for_one_run_exactly_one_wins(self, store: Store) -> None:
        for trial in range(RACE_TRIALS):
            run_id = await self.admit(store)
            only = run_id if trial % 2 else None
            results = await asyncio.gather(
                store.claim("worker-a", LEASE, run_id=only),
                store.claim("worker-b", LEASE, run_id=only),
            )
            winners = [claim for claim in results if claim is not None]
            assert len(winners) == 1, f"trial {trial}: {results}"
            assert winners[0].run_id == run_id
            assert winners[0].attempt == 1
            log = await store.read(run_id)
            assert [record.seq for record in log] == [0, 1], f"trial {trial}"

    async def test_many_claimers_share_many_runs_without_overlap(self, store: Store) -> None:
        run_ids = {await self.admit(store) for _ in range(20)}

        async def claimer(worker: str) -> list[Claim]:
            taken: list[Claim] = []
            while (claim := await store.claim(worker, LEASE)) is not None:
                taken.append(claim)
            return taken

        results = await asyncio.gather(*(claimer(f"worker-{i}") for i in range(5)))
        taken = [claim.run_id for claims in results for claim in claims]
        assert sorted(taken) == sorted(run_ids), "each run claimed exactly once"


class LeaseContract(StoreHarness):
    """Leases: expiry, renewal, release, and the runs that hold none."""

    async def test_an_expired_lease_can_be_claimed_again(self, store: Store) -> None:
        first = await self.admit_and_claim(store, ttl=SHORT_LEASE)
        assert await store.claim("worker-2", LEASE, run_id=first.run_id) is None
        await asyncio.sleep(AFTER_SHORT_LEASE)
        second = await store.claim("worker-2", LEASE)
        assert second is not None
        assert (second.run_id, second.attempt) == (first.run_id, 2)
        assert second.record.body == AttemptStarted(worker_id="worker-2")
        with pytest.raises(LeaseLost):
            await store.renew(first.run_id, 1, LEASE)

    async def test_renew_extends_the_lease(self, store: Store) -> None:
        ttl = dt.timedelta(seconds=1)
        claim = await self.admit_and_claim(store, ttl=ttl)
        await asyncio.sleep(0.6)
        renewed = await store.renew(claim.run_id, 1, ttl)
        assert renewed.lease_expires_at > claim.lease_expires_at
        assert renewed.inbox_last == 0
        row = await self.row(store, claim.run_id)
        assert row.lease_expires_at == renewed.lease_expires_at == row.runnable_at
        await asyncio.sleep(0.6)  # past the first expiry, before the renewed one
        assert await store.claim("worker-2", ttl, run_id=claim.run_id) is None
        await self.append_entries(store, claim, 1)

    async def test_a_superseded_attempt_cannot_renew_or_release(self, store: Store) -> None:
        first = await self.admit_and_claim(store, ttl=SHORT_LEASE)
        await asyncio.sleep(AFTER_SHORT_LEASE)
        second = await store.claim("worker-2", LEASE, run_id=first.run_id)
        assert second is not None
        with pytest.raises(LeaseLost):
            await store.renew(first.run_id, 1, LEASE)
        with pytest.raises(LeaseLost):
            await store.release(first.run_id, 1)
        row = await self.row(store, first.run_id)
        assert (row.attempt, row.lease_owner) == (2, "worker-2")

    async def test_renew_and_release_of_a_run_that_does_not_exist(self, store: Store) -> None:
        with pytest.raises(RunNotFound):
            await store.renew("no-such-run", 1, LEASE)
        with pytest.raises(RunNotFound):
            await store.release("no-such-run", 1)

    async def test_release_makes_the_run_claimable_again(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await store.release(claim.run_id, 1)
        row = await self.row(store, claim.run_id)
        assert (row.status, row.lease_owner, row.lease_expires_at) == ("queued", None, None)
        with pytest.raises(LeaseLost):
            await store.renew(claim.run_id, 1, LEASE)
        with pytest.raises(LeaseLost):
            await store.append(claim.run_id, 1, self._one(claim, row.next_seq))
        again = await store.claim("worker-2", LEASE)
        assert again is not None
        assert (again.run_id, again.attempt) == (claim.run_id, 2)

    async def test_release_to_a_later_time(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await store.release(claim.run_id, 1, utc_now() + SHORT_LEASE)
        assert await store.claim("worker-2", LEASE) is None
        await asyncio.sleep(AFTER_SHORT_LEASE)
        again = await store.claim("worker-2", LEASE)
        assert again is not None
        assert again.run_id == claim.run_id

    async def test_a_suspended_run_holds_no_lease_and_is_not_claimable(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        await self.append_entries(
            store, claim, 1, index=RunIndex(status="waiting", waiting="external")
        )
        row = await self.row(store, claim.run_id)
        assert (row.status, row.waiting) == ("waiting", "external")
        assert (row.lease_owner, row.lease_expires_at, row.runnable_at) == (None, None, None)
        assert await store.claim("worker-2", LEASE) is None
        assert await store.claim("worker-2", LEASE, run_id=claim.run_id) is None
        with pytest.raises(LeaseLost):
            await store.renew(claim.run_id, 1, LEASE)
        with pytest.raises(LeaseLost):
            await store.append(claim.run_id, 1, self._one(claim, row.next_seq))

    async def test_a_timed_wait_is_claimable_at_its_due_time(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        due = utc_now() + SHORT_LEASE
        index = RunIndex(status="waiting", waiting="external", due_at=due)
        await self.append_entries(store, claim, 1, index=index)
        row = await self.row(store, claim.run_id)
        assert (row.lease_owner, row.runnable_at) == (None, due)
        assert await store.claim("worker-2", LEASE) is None
        await asyncio.sleep(AFTER_SHORT_LEASE)
        again = await store.claim("worker-2", LEASE)
        assert again is not None
        assert (again.run_id, again.attempt) == (claim.run_id, 2)
        assert (await self.row(store, claim.run_id)).waiting is None

    async def test_a_finished_run_holds_no_lease_and_is_not_claimable(self, store: Store) -> None:
        for status in ("completed", "failed", "cancelled"):
            claim = await self.admit_and_claim(store)
            await self.append_entries(store, claim, 1, index=RunIndex(status=status))
            row = await self.row(store, claim.run_id)
            assert row.status == status
            assert (row.lease_owner, row.lease_expires_at, row.runnable_at) == (None, None, None)
            assert await store.claim("worker-2", LEASE, run_id=claim.run_id) is None
            with pytest.raises(LeaseLost):
                await store.release(claim.run_id, 1)
            with pytest.raises(LeaseLost):
                await store.append(claim.run_id, 1, self._one(claim, row.next_seq))
        assert await store.claim("worker-2", LEASE) is None

    @staticmethod
    def _one(claim: Claim, seq: int) -> Batch:
        return batch_of([entry(claim.run_id, seq, claim.attempt)])


class AttemptLimitContract(StoreHarness):
    """``max_attempts``: a run that keeps dying is failed by the claim, not run again."""

    async def _exhaust(self, store: Store, run_id: str, attempts: int) -> None:
        for attempt in range(1, attempts + 1):
            claim = await store.claim("worker-1", LEASE, run_id=run_id, max_attempts=attempts)
            assert claim is not None
            assert claim.attempt == attempt
            await store.release(run_id, attempt)

    async def test_a_run_out_of_attempts_is_failed_not_started(self, store: Store) -> None:
        run_id = await self.admit(store)
        await self._exhaust(store, run_id, 3)
        assert await store.claim("worker-2", LEASE, max_attempts=3) is None
        row = await self.row(store, run_id)
        assert (row.status, row.attempt) == ("failed", 3)
        assert (row.lease_owner, row.lease_expires_at, row.runnable_at) == (None, None, None)
        log = await store.read(run_id)
        assert [record.seq for record in log] == list(range(5))
        last = log[-1]
        assert isinstance(last.body, RunFailed)
        assert last.body.reason == "attempts_exhausted"
        assert last.attempt == 3
        assert run_id in last.body.error
        assert "3" in last.body.error
        assert await store.claim("worker-2", LEASE) is None, "a failed run stays failed"

    async def test_the_claim_moves_on_to_the_next_run(self, store: Store) -> None:
        worn = await self.admit(store)
        fresh = await self.admit(store)
        await self._exhaust(store, worn, 2)
        claim = await store.claim("worker-2", LEASE, max_attempts=2)
        assert claim is not None
        assert (claim.run_id, claim.attempt) == (fresh, 1)
        assert (await self.row(store, worn)).status == "failed"

    async def test_a_claim_by_run_id_fails_it_and_returns_none(self, store: Store) -> None:
        run_id = await self.admit(store)
        await self._exhaust(store, run_id, 1)
        assert await store.claim("worker-2", LEASE, run_id=run_id, max_attempts=1) is None
        assert (await self.row(store, run_id)).status == "failed"

    async def test_the_default_allows_ten_attempts(self, store: Store) -> None:
        run_id = await self.admit(store)
        for attempt in range(1, 11):
            claim = await store.claim("worker-1", LEASE, run_id=run_id)
            assert claim is not None
            assert claim.attempt == attempt
            await store.release(run_id, attempt)
        assert await store.claim("worker-1", LEASE, run_id=run_id) is None
        assert (await self.row(store, run_id)).status == "failed"

    async def test_a_leased_run_at_its_last_attempt_is_left_alone(self, store: Store) -> None:
        run, first = admission()
        await store.create_run(run, first)
        claim = await store.claim("worker-1", LEASE, run_id=run.run_id, max_attempts=1)
        assert claim is not None
        assert await store.claim("worker-2", LEASE, max_attempts=1) is None
        row = await self.row(store, run.run_id)
        assert (row.status, row.lease_owner) == ("running", "worker-1")
