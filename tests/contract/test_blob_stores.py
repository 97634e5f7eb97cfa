"""The blob stores in the box pass the blob contract, and `OffloadingStore` is a `Store` that
passes the store contract with every record body kept as a blob."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from psych_runtime import FileBlobStore, MemoryBlobStore, MemoryStore, OffloadingStore
from psych_runtime.errors import Conflict, RunNotFound, StoreError
from psych_runtime.ports import Append, AppendResult, Store
from psych_runtime.records import Offloaded
from psych_runtime.testing._contract_harness import batch_of, entry
from psych_runtime.testing.blob_contract import TENANT, BlobStoreContract
from psych_runtime.testing.store_contract import (
    AdmissionContract,
    AppendContract,
    AttemptLimitContract,
    ClaimContract,
    DeletionContract,
    GroupCommitContract,
    InboxContract,
    LeaseContract,
    ListingContract,
    SpecContract,
    TenancyContract,
    UnicodeContract,
    WaitContract,
)

pytestmark = pytest.mark.contract


class TestMemoryBlobStore(BlobStoreContract):
    async def create_blob_store(self) -> MemoryBlobStore:
        return MemoryBlobStore()


class TestFileBlobStore(BlobStoreContract):
    @pytest.fixture(autouse=True)
    def _root(self, tmp_path: Path) -> None:
        self.root = tmp_path / "blobs"

    async def create_blob_store(self) -> FileBlobStore:
        return FileBlobStore(self.root)


# Every part of the store contract but the limits: an OffloadingStore takes records over the
# inner store's limits by design (it keeps their bodies as blobs), so "one byte more is
# refused" does not hold for it. Threshold 0 puts every body in the blob store, so each test
# goes through offloading and restoring.
class TestOffloadingStore(
    AdmissionContract,
    AppendContract,
    GroupCommitContract,
    UnicodeContract,
    ClaimContract,
    LeaseContract,
    AttemptLimitContract,
    TenancyContract,
    ListingContract,
    DeletionContract,
    SpecContract,
    WaitContract,
    InboxContract,
):
    async def create_store(self) -> OffloadingStore:
        return OffloadingStore(MemoryStore(), MemoryBlobStore(), threshold=0)

    async def test_a_batch_with_one_bad_record_writes_nothing(self, store: Store) -> None:
        # Replaces the contract's test: a record over the inner store's limit is no longer
        # bad here (its body goes to the blob store), so only the other two cases apply,
        # and the big record is taken, its body kept as a blob and read back whole.
        claim = await self.admit_and_claim(store)
        run_id = claim.run_id
        not_contiguous = [entry(run_id, 2, 1), entry(run_id, 3, 1), entry(run_id, 5, 1)]
        other_run = [entry(run_id, 2, 1), entry("another-run", 3, 1)]
        for records in (not_contiguous, other_run):
            with pytest.raises(StoreError):
                await store.append(run_id, 1, batch_of(records))
            assert [record.seq for record in await store.read(run_id)] == [0, 1]
        big = entry(run_id, 2, 1, "a" * store.limits.max_record_bytes)
        await store.append(run_id, 1, batch_of([big]))
        assert (await store.read(run_id, 1)) == [big]
        assert isinstance(store, OffloadingStore)
        [kept] = await store.store.read(run_id, 1)
        assert isinstance(kept.body, Offloaded)
        assert kept.body.size > store.limits.max_record_bytes

    async def test_each_refusal_is_the_one_append_would_give(self, store: Store) -> None:
        # Replaces the contract's test for the same reason: a record over the inner store's
        # limit is kept as a blob here, so in a group it lands beside the others.
        taken, gap, large, good = [await self.admit_and_claim(store) for _ in range(4)]
        big = entry(large.run_id, 2, 1, "a" * store.limits.max_record_bytes)
        group = [
            await self.next_append(store, good),
            Append(taken.run_id, 1, batch_of([entry(taken.run_id, 1, 1, "taken")])),
            Append(gap.run_id, 1, batch_of([entry(gap.run_id, 7, 1)])),
            Append(large.run_id, 1, batch_of([big])),
            Append("no-such-run", 1, batch_of([entry("no-such-run", 1, 1)])),
        ]
        outcomes = await store.append_many(group)
        assert outcomes[0] == AppendResult(0)
        assert isinstance(outcomes[1], Conflict), outcomes[1]
        assert isinstance(outcomes[2], Conflict), outcomes[2]
        assert outcomes[3] == AppendResult(0)
        assert isinstance(outcomes[4], RunNotFound), outcomes[4]
        assert (await store.read(large.run_id, 1)) == [big]
        assert len(await store.read(taken.run_id)) == 2


def files_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


async def test_file_blobs_are_files_under_a_tenant_key_not_the_tenant_name(
    tmp_path: Path,
) -> None:
    blobs = FileBlobStore(tmp_path)
    ref = await blobs.put("acme/../../etc", b"content")
    [path] = files_under(tmp_path)
    assert path.name == ref.removeprefix("sha256:")
    assert path.is_relative_to(tmp_path)
    assert "acme" not in str(path.relative_to(tmp_path))
    assert path.suffix == "", "no temporary file is left behind"


async def test_a_file_blob_changed_on_disk_is_refused(tmp_path: Path) -> None:
    blobs = FileBlobStore(tmp_path)
    ref = await blobs.put(TENANT, b"the original")
    [path] = files_under(tmp_path)
    path.write_bytes(b"tampered")
    with pytest.raises(StoreError, match="does not match its reference"):
        await blobs.get(TENANT, ref)


async def test_a_file_blob_store_shares_blobs_across_instances(tmp_path: Path) -> None:
    # Another process opening the same directory finds what this one wrote.
    ref = await FileBlobStore(tmp_path).put(TENANT, b"shared")
    assert await FileBlobStore(tmp_path).get(TENANT, ref) == b"shared"
    assert ref == "sha256:" + hashlib.sha256(b"shared").hexdigest()
