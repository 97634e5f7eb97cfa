"""`MemoryBlobStore`: the blob store in the box. It dies with the process."""

from __future__ import annotations

from psych_core import BlobNotFound, blob_ref, is_blob_ref


class MemoryBlobStore:
    """A `BlobStore` in this process's memory: for tests, `session()` and one-process apps.

    Blobs are kept per tenant, so a tenant never finds another's, even for equal content.
    """

    def __init__(self) -> None:
        self._blobs: dict[tuple[str, str], bytes] = {}

    async def put(self, tenant: str, data: bytes) -> str:
        """Keep `data` for `tenant` (once, however often it is put); return its reference."""
        ref = blob_ref(data)
        self._blobs.setdefault((tenant, ref), bytes(data))
        return ref

    async def get(self, tenant: str, ref: str) -> bytes:
        """The bytes of `tenant`'s blob `ref`; `BlobNotFound` when it has none."""
        if not is_blob_ref(ref):
            raise BlobNotFound(ref)
        try:
            return self._blobs[(tenant, ref)]
        except KeyError:
            raise BlobNotFound(ref) from None

    def sizes(self, tenant: str) -> dict[str, int]:
        """The references of `tenant`'s blobs and their sizes in bytes (for tests)."""
        return {ref: len(data) for (owner, ref), data in self._blobs.items() if owner == tenant}

    def __repr__(self) -> str:
        return f"MemoryBlobStore({len(self._blobs)} blobs)"
