"""The contract of runs as a whole: tenancy, listings, deletion, specs, waiting."""

from __future__ import annotations

import asyncio
import time

import pytest

from psych_core import RunIndex, RunNotFound, RunQuery, RunRow, RunStatusName, Scope, Store
from psych_runtime.testing._contract_harness import (
    LEASE,
    OTHER_TENANT,
    TENANT,
    StoreHarness,
    admission,
)


class TenancyContract(StoreHarness):
    """Another tenant's run is exactly like a run that does not exist, on every call."""

    async def test_other_tenants_see_nothing(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        assert await store.get_run(OTHER_TENANT, claim.run_id) is None
        assert (await store.list_runs(OTHER_TENANT, RunQuery())).items == ()
        assert await store.delete_run(OTHER_TENANT, claim.run_id) is False
        assert (await self.row(store, claim.run_id)).lease_owner == "worker-1", "untouched"
        assert len(await store.read(claim.run_id)) == 2

    async def test_a_scoped_store_hides_other_tenants_runs(self, store: Store) -> None:
        mine = await self.admit(store)
        theirs = await self.admit(store, tenant=OTHER_TENANT)
        scoped = store.scoped(Scope(tenant=TENANT))
        assert (await scoped.run(mine)).run_id == mine
        assert len(await scoped.read(mine)) == 1
        for call in (scoped.run(theirs), scoped.read(theirs)):
            with pytest.raises(RunNotFound) as missing:
                await call
            assert missing.value.run_id == theirs
        with pytest.raises(RunNotFound):
            await scoped.run("no-such-run")
        assert [row.run_id for row in (await scoped.list_runs()).items] == [mine]
        assert await scoped.delete_run(theirs) is False
        assert await self.row(store, theirs, OTHER_TENANT)

    async def test_tenants_may_reuse_each_others_names(self, store: Store) -> None:
        # Same agent, same key, same request: still two runs, one per tenant.
        for tenant in (TENANT, OTHER_TENANT):
            run, first = admission(tenant=tenant, key="shared")
            assert (await store.create_run(run, first))[1] is True
        for tenant in (TENANT, OTHER_TENANT):
            page = await store.list_runs(tenant, RunQuery())
            assert [row.tenant for row in page.items] == [tenant]


class ListingContract(StoreHarness):
    """`list_runs`: newest first, filtered, paged without repeats or gaps."""

    @staticmethod
    async def _all(store: Store, tenant: str, query: RunQuery) -> list[list[RunRow]]:
        pages: list[list[RunRow]] = []
        cursor = query.cursor
        while True:
            page = await store.list_runs(
                tenant,
                RunQuery(
                    status=query.status,
                    parent_run_id=query.parent_run_id,
                    cursor=cursor,
                    limit=query.limit,
                ),
            )
            pages.append(list(page.items))
            if page.next_cursor is None:
                return pages
            assert len(pages) < 100, "list_runs never returned a last page"
            cursor = page.next_cursor

    async def test_pages_come_newest_first(self, store: Store) -> None:
        mine = []
        for i in range(7):
            mine.append(await self.admit(store))
            if i % 2:
                await self.admit(store, tenant=OTHER_TENANT)
        pages = await self._all(store, TENANT, RunQuery(limit=3))
        assert [len(page) for page in pages] == [3, 3, 1]
        assert [row.run_id for page in pages for row in page] == mine[::-1]

    async def test_the_last_full_page_has_no_cursor(self, store: Store) -> None:
        for _ in range(6):
            await self.admit(store)
        pages = await self._all(store, TENANT, RunQuery(limit=3))
        assert [len(page) for page in pages] == [3, 3]

    async def test_an_empty_tenant_has_one_empty_page(self, store: Store) -> None:
        page = await store.list_runs(TENANT, RunQuery())
        assert (page.items, page.next_cursor) == ((), None)

    async def test_paging_is_stable_while_runs_are_created(self, store: Store) -> None:
        old = [await self.admit(store) for _ in range(5)]
        first = await store.list_runs(TENANT, RunQuery(limit=2))
        new = [await self.admit(store) for _ in range(2)]
        rest = await self._all(store, TENANT, RunQuery(cursor=first.next_cursor, limit=2))
        seen = [row.run_id for row in first.items] + [r.run_id for page in rest for r in page]
        assert seen == old[::-1], "no repeat, no gap, and runs newer than the cursor are not in"
        latest = await store.list_runs(TENANT, RunQuery(limit=2))
        assert [row.run_id for row in latest.items] == new[::-1]

    async def test_filter_by_status(self, store: Store) -> None:
        queued = [await self.admit(store) for _ in range(3)]
        running = await self.admit_and_claim(store)
        done = await self.admit_and_claim(store)
        await self.append_entries(store, done, 1, index=RunIndex(status="completed"))
        waiting = await self.admit_and_claim(store)
        await self.append_entries(
            store, waiting, 1, index=RunIndex(status="waiting", waiting="approval")
        )
        expected: dict[RunStatusName, list[str]] = {
            "queued": queued[::-1],
            "running": [running.run_id],
            "completed": [done.run_id],
            "waiting": [waiting.run_id],
            "failed": [],
        }
        for status, run_ids in expected.items():
            pages = await self._all(store, TENANT, RunQuery(status=status, limit=2))
            assert [row.run_id for page in pages for row in page] == run_ids, status
            assert all(row.status == status for page in pages for row in page)

    async def test_filter_by_parent(self, store: Store) -> None:
        parent = await self.admit(store)
        children = [await self.admit(store, parent=parent) for _ in range(3)]
        await self.admit(store, parent="another-parent")
        pages = await self._all(store, TENANT, RunQuery(parent_run_id=parent, limit=2))
        assert [row.run_id for page in pages for row in page] == children[::-1]


class DeletionContract(StoreHarness):
    """`delete_run`: the row, the records and the idempotency key go together."""

    async def test_delete_removes_the_run_its_log_and_its_key(self, store: Store) -> None:
        run, first = admission(key="order-7")
        await store.create_run(run, first)
        claim = await store.claim("worker-1", LEASE, run_id=run.run_id)
        assert claim is not None
        await self.append_entries(store, claim, 2)
        assert await store.delete_run(TENANT, run.run_id) is True
        assert await store.get_run(TENANT, run.run_id) is None
        assert await store.read(run.run_id) == []
        assert (await store.list_runs(TENANT, RunQuery())).items == ()
        assert await store.claim("worker-2", LEASE) is None
        assert await store.delete_run(TENANT, run.run_id) is False
        again, again_first = admission(key="order-7", request="another request")
        assert await store.create_run(again, again_first) == (again.run_id, True)

    async def test_delete_leaves_other_runs_alone(self, store: Store) -> None:
        keep = await self.admit(store)
        drop = await self.admit(store)
        await store.delete_run(TENANT, drop)
        assert len(await store.read(keep)) == 1
        assert [row.run_id for row in (await store.list_runs(TENANT, RunQuery())).items] == [keep]


class SpecContract(StoreHarness):
    """`put_spec` and `get_spec`: specs by version, written once."""

    async def test_specs_are_kept_by_version(self, store: Store) -> None:
        assert await store.get_spec("sha256:unknown") is None
        await store.put_spec("sha256:a", '{"name": "a"}')
        await store.put_spec("sha256:b", '{"name": "b"}')
        assert await store.get_spec("sha256:a") == '{"name": "a"}'
        assert await store.get_spec("sha256:b") == '{"name": "b"}'

    async def test_storing_a_version_again_changes_nothing(self, store: Store) -> None:
        await store.put_spec("sha256:a", '{"name": "a"}')
        await store.put_spec("sha256:a", '{"name": "changed"}')
        assert await store.get_spec("sha256:a") == '{"name": "a"}'


class WaitContract(StoreHarness):
    """`wait`: early when records land (or work appears), after the timeout otherwise."""

    async def test_wait_returns_when_a_record_lands(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        started = time.monotonic()
        waiter = asyncio.create_task(store.wait(claim.run_id, 1, timeout=30))
        await asyncio.sleep(0.1)
        assert not waiter.done(), "nothing new yet"
        await self.append_entries(store, claim, 1)
        await asyncio.wait_for(waiter, timeout=5)
        assert time.monotonic() - started < 5

    async def test_wait_returns_at_once_when_records_exist(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        started = time.monotonic()
        await store.wait(claim.run_id, 0, timeout=30)
        assert time.monotonic() - started < 5

    async def test_wait_returns_after_the_timeout(self, store: Store) -> None:
        claim = await self.admit_and_claim(store)
        started = time.monotonic()
        await store.wait(claim.run_id, 1, timeout=0.3)
        elapsed = time.monotonic() - started
        assert 0.25 <= elapsed < 5, elapsed

    async def test_wait_for_work_returns_when_a_run_is_admitted(self, store: Store) -> None:
        started = time.monotonic()
        waiter = asyncio.create_task(store.wait(None, -1, timeout=30))
        await asyncio.sleep(0.1)
        await self.admit(store)
        await asyncio.wait_for(waiter, timeout=5)
        assert time.monotonic() - started < 5
