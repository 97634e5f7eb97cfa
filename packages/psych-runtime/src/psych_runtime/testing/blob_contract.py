"""The blob store contract suite: one abstract pytest class every `BlobStore` passes.

Certify an adapter with a few lines::

    from psych_runtime.testing.blob_contract import BlobStoreContract
    from my_blobs import MyBlobStore


    class TestMyBlobStore(BlobStoreContract):
        async def create_blob_store(self) -> MyBlobStore:
            return MyBlobStore(...)  # fresh: no other test uses or sees into it

What it covers: round trips (empty, binary, 5 MB), references (``sha256:`` of the content,
the same for the same content), idempotent puts, tenant isolation (another tenant's blob is
`BlobNotFound`, with the same message as a blob that was never stored, even for content both
tenants stored), malformed references refused without a lookup, concurrent puts of one blob.

This module imports pytest: it ships in the ``psych-runtime[testing]`` extra.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from psych_core import BlobNotFound, BlobStore

TENANT = "tenant-a"
OTHER_TENANT = "tenant-b"


class BlobStoreContract:
    """Every test of the blob store contract. Subclass it and implement `create_blob_store`.

    pytest collects the subclass (name it ``Test...``), never this class itself.
    """

    async def create_blob_store(self) -> BlobStore:
        """A fresh blob store for one test."""
        raise NotImplementedError

    async def close_blob_store(self, blobs: BlobStore) -> None:
        """Release what `create_blob_store` made (nothing by default)."""

    @pytest_asyncio.fixture
    async def blobs(self) -> AsyncIterator[BlobStore]:
        store = await self.create_blob_store()
        try:
            yield store
        finally:
            await self.close_blob_store(store)

    @pytest.mark.asyncio
    async def test_a_blob_reads_back_exactly(self, blobs: BlobStore) -> None:
        for data in (b"", b"hello", bytes(range(256)) * 4, os.urandom(5 * 1024 * 1024)):
            ref = await blobs.put(TENANT, data)
            assert await blobs.get(TENANT, ref) == data

    @pytest.mark.asyncio
    async def test_the_reference_is_the_sha256_of_the_content(self, blobs: BlobStore) -> None:
        data = b'{"type": "tool_call_finished"}'
        ref = await blobs.put(TENANT, data)
        assert ref == "sha256:" + hashlib.sha256(data).hexdigest()

    @pytest.mark.asyncio
    async def test_putting_the_same_content_again_changes_nothing(self, blobs: BlobStore) -> None:
        first = await blobs.put(TENANT, b"same")
        second = await blobs.put(TENANT, b"same")
        assert first == second
        assert await blobs.get(TENANT, first) == b"same"

    @pytest.mark.asyncio
    async def test_concurrent_puts_of_one_blob_all_succeed(self, blobs: BlobStore) -> None:
        data = os.urandom(256 * 1024)
        refs = await asyncio.gather(*(blobs.put(TENANT, data) for _ in range(8)))
        assert len(set(refs)) == 1
        assert await blobs.get(TENANT, refs[0]) == data

    @pytest.mark.asyncio
    async def test_a_missing_blob_is_blob_not_found(self, blobs: BlobStore) -> None:
        missing = "sha256:" + hashlib.sha256(b"never stored").hexdigest()
        with pytest.raises(BlobNotFound) as caught:
            await blobs.get(TENANT, missing)
        assert caught.value.ref == missing

    @pytest.mark.asyncio
    async def test_another_tenants_blob_looks_exactly_like_a_missing_one(
        self, blobs: BlobStore
    ) -> None:
        ref = await blobs.put(TENANT, b"only tenant a's")
        missing = "sha256:" + hashlib.sha256(b"never stored").hexdigest()
        with pytest.raises(BlobNotFound) as other:
            await blobs.get(OTHER_TENANT, ref)
        with pytest.raises(BlobNotFound) as absent:
            await blobs.get(OTHER_TENANT, missing)
        assert str(other.value).replace(ref, "REF") == str(absent.value).replace(missing, "REF")
        assert await blobs.get(TENANT, ref) == b"only tenant a's"

    @pytest.mark.asyncio
    async def test_equal_content_of_two_tenants_is_two_blobs(self, blobs: BlobStore) -> None:
        ref = await blobs.put(TENANT, b"shared words")
        assert await blobs.put(OTHER_TENANT, b"shared words") == ref
        assert await blobs.get(OTHER_TENANT, ref) == b"shared words"
        assert await blobs.get(TENANT, ref) == b"shared words"

    @pytest.mark.asyncio
    @pytest.mark.parametrize(
        "ref",
        [
            "",
            "sha256:",
            "sha256:../../etc/passwd",
            "sha256:" + "A" * 64,
            "md5:" + "0" * 32,
            "sha256:" + "0" * 63 + "/",
            "../" + "0" * 64,
        ],
    )
    async def test_a_malformed_reference_is_blob_not_found(
        self, blobs: BlobStore, ref: str
    ) -> None:
        await blobs.put(TENANT, b"something")
        with pytest.raises(BlobNotFound):
            await blobs.get(TENANT, ref)


__all__ = ["OTHER_TENANT", "TENANT", "BlobStoreContract"]
