"""The contract of `store.limits`: everything up to a limit is kept, one byte more is refused.

Sizes are the UTF-8 bytes of each record's JSON (`Record.model_dump_json`). A refused record
or batch writes nothing: the log and the run row are as they were.
"""

from __future__ import annotations

import pytest

from psych_core import Claim, Record, RecordTooLarge, Store
from psych_runtime.testing._contract_harness import (
    TENANT,
    StoreHarness,
    admission,
    batch_of,
    entry,
    size_of,
    sized_entry,
)


def _split(total: int, parts: int) -> list[int]:
    """`total` bytes as `parts` sizes that differ by at most one."""
    share, extra = divmod(total, parts)
    return [share + (1 if i < extra else 0) for i in range(parts)]


class LimitsContract(StoreHarness):
    """Records and batches at exactly the declared limits, and one byte (or record) over."""

    async def _unchanged(self, store: Store, claim: Claim, log: list[Record]) -> None:
        assert await store.read(claim.run_id) == log
        assert (await self.row(store, claim.run_id)).next_seq == len(log)

    async def test_the_limits_are_declared(self, store: Store) -> None:
        limits = store.limits
        assert limits.max_record_bytes >= 64 * 1024, "a store must keep a 64 KiB record"
        assert limits.max_append_records >= 64
        assert limits.max_append_bytes >= limits.max_record_bytes

    async def test_a_record_at_the_limit_is_kept_and_one_byte_more_is_refused(
        self, store: Store
    ) -> None:
        limit = store.limits.max_record_bytes
        claim = await self.admit_and_claim(store)
        over = sized_entry(claim.run_id, 2, 1, limit + 1)
        log = await store.read(claim.run_id)
        with pytest.raises(RecordTooLarge) as refused:
            await store.append(claim.run_id, 1, batch_of([over]))
        assert (refused.value.run_id, refused.value.seq) == (claim.run_id, 2)
        assert (refused.value.size, refused.value.limit) == (limit + 1, limit)
        await self._unchanged(store, claim, log)
        exact = sized_entry(claim.run_id, 2, 1, limit)
        await store.append(claim.run_id, 1, batch_of([exact]))
        assert (await store.read(claim.run_id, after_seq=1)) == [exact]

    async def test_limits_count_bytes_not_characters(self, store: Store) -> None:
        limit = store.limits.max_record_bytes
        claim = await self.admit_and_claim(store)
        # "é" is two bytes: this record has fewer characters than the limit, more bytes.
        over = sized_entry(claim.run_id, 2, 1, limit + 1, fill="é")
        assert len(over.model_dump_json()) <= limit < size_of(over)
        log = await store.read(claim.run_id)
        with pytest.raises(RecordTooLarge):
            await store.append(claim.run_id, 1, batch_of([over]))
        await self._unchanged(store, claim, log)
        exact = sized_entry(claim.run_id, 2, 1, limit, fill="é")
        await store.append(claim.run_id, 1, batch_of([exact]))
        assert (await store.read(claim.run_id, after_seq=1)) == [exact]

    async def test_a_first_record_at_the_limit_is_kept_and_one_byte_more_is_refused(
        self, store: Store
    ) -> None:
        limit = store.limits.max_record_bytes
        base = size_of(admission(input="")[1])
        run, over = admission(input="a" * (limit + 1 - base))
        assert size_of(over) == limit + 1
        with pytest.raises(RecordTooLarge):
            await store.create_run(run, over)
        assert await store.get_run(TENANT, run.run_id) is None
        assert await store.read(run.run_id) == []
        run, exact = admission(input="a" * (limit - base))
        assert size_of(exact) == limit
        await store.create_run(run, exact)
        assert await store.read(run.run_id) == [exact]

    async def test_a_batch_at_the_record_count_limit(self, store: Store) -> None:
        count = store.limits.max_append_records
        claim = await self.admit_and_claim(store)
        records = [entry(claim.run_id, 2 + i, 1) for i in range(count + 1)]
        log = await store.read(claim.run_id)
        with pytest.raises(RecordTooLarge):
            await store.append(claim.run_id, 1, batch_of(records))
        await self._unchanged(store, claim, log)
        assert sum(size_of(record) for record in records[:count]) <= (
            store.limits.max_append_bytes
        ), "the declared limits leave no room for a full batch of small records"
        await store.append(claim.run_id, 1, batch_of(records[:count]))
        assert len(await store.read(claim.run_id)) == 2 + count

    async def test_a_batch_at_the_byte_limit_is_kept_and_one_byte_more_is_refused(
        self, store: Store
    ) -> None:
        limits = store.limits
        total = limits.max_append_bytes
        claim = await self.admit_and_claim(store)
        log = await store.read(claim.run_id)
        parts = -(-(total + 1) // limits.max_record_bytes)  # fewest records that can carry it
        over = [
            sized_entry(claim.run_id, 2 + i, 1, size)
            for i, size in enumerate(_split(total + 1, parts))
        ]
        with pytest.raises(RecordTooLarge):
            await store.append(claim.run_id, 1, batch_of(over))
        await self._unchanged(store, claim, log)
        del over
        parts = -(-total // limits.max_record_bytes)
        assert parts <= limits.max_append_records, "max_append_bytes cannot be reached"
        exact = [
            sized_entry(claim.run_id, 2 + i, 1, size) for i, size in enumerate(_split(total, parts))
        ]
        assert sum(size_of(record) for record in exact) == total
        await store.append(claim.run_id, 1, batch_of(exact))
        assert (await self.row(store, claim.run_id)).next_seq == 2 + parts
        kept = await store.read(claim.run_id, after_seq=1)
        assert [record.seq for record in kept] == [record.seq for record in exact]
        assert sum(size_of(record) for record in kept) == total
