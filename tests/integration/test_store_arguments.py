"""What every store refuses alike before it writes anything, now that one definition of each
rule serves them all (`psych_core.ports.check_claim`, `check_ttl`, `page_of`,
`cursor_position`): a lease that is not positive, fewer than one attempt, a page of fewer
than one run, a cursor the store did not issue."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from psych_runtime import AgentSpec, ModelRef, RunQuery, Scope, dispatch
from psych_runtime.ports import Store
from tests.integration._every_store import KINDS, fresh_store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TENANT = "arguments"
SCOPE = Scope(tenant=TENANT)
SPEC = AgentSpec(name="arguments", model=ModelRef(model="fake"))
LEASE = dt.timedelta(seconds=60)
NOT_POSITIVE = (dt.timedelta(0), dt.timedelta(seconds=-1))


async def _admit(store: Store) -> str:
    return await dispatch(store.scoped(SCOPE), SPEC, "hi")


async def _untouched(store: Store, run_id: str) -> None:
    row = await store.get_run(TENANT, run_id)
    assert row is not None
    assert (row.status, row.attempt, row.lease_owner, row.next_seq) == ("queued", 0, None, 1)
    assert [record.seq for record in await store.read(run_id)] == [0]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_claim_with_a_lease_that_is_not_positive_is_refused_and_takes_nothing(
    kind: str, tmp_path: Path
) -> None:
    async with fresh_store(kind, tmp_path) as store:
        run_id = await _admit(store)
        for ttl in NOT_POSITIVE:
            with pytest.raises(ValueError, match="lease ttl must be positive"):
                await store.claim("worker", ttl)
            with pytest.raises(ValueError, match="lease ttl must be positive"):
                await store.claim("worker", ttl, run_id=run_id)
        await _untouched(store, run_id)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_renewal_that_is_not_positive_is_refused_and_the_lease_stays(
    kind: str, tmp_path: Path
) -> None:
    async with fresh_store(kind, tmp_path) as store:
        run_id = await _admit(store)
        claim = await store.claim("worker", LEASE, run_id=run_id)
        assert claim is not None
        for ttl in NOT_POSITIVE:
            with pytest.raises(ValueError, match="lease ttl must be positive"):
                await store.renew(run_id, claim.attempt, ttl)
        row = await store.get_run(TENANT, run_id)
        assert row is not None
        assert (row.lease_owner, row.lease_expires_at) == ("worker", claim.lease_expires_at)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_claim_with_fewer_than_one_attempt_is_refused_and_takes_nothing(
    kind: str, tmp_path: Path
) -> None:
    async with fresh_store(kind, tmp_path) as store:
        run_id = await _admit(store)
        for attempts in (0, -1):
            with pytest.raises(ValueError, match="max_attempts must be at least 1"):
                await store.claim("worker", LEASE, max_attempts=attempts)
        await _untouched(store, run_id)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_page_of_fewer_than_one_run_is_empty(kind: str, tmp_path: Path) -> None:
    async with fresh_store(kind, tmp_path) as store:
        for _ in range(3):
            await _admit(store)
        for limit in (0, -1):
            page = await store.list_runs(TENANT, RunQuery(limit=limit))
            assert (page.items, page.next_cursor) == ((), None)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_cursor_the_store_did_not_issue_is_refused_saying_what_to_pass(
    kind: str, tmp_path: Path
) -> None:
    async with fresh_store(kind, tmp_path) as store:
        await _admit(store)
        with pytest.raises(ValueError, match=r"not issued by this store; pass a Page\.next_cursor"):
            await store.list_runs(TENANT, RunQuery(cursor="not-a-cursor"))
