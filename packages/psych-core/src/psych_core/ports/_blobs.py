"""The `BlobStore` port: large content, kept once per tenant and named by its hash."""

from __future__ import annotations

import hashlib
import re
from typing import Protocol, runtime_checkable

_REF = re.compile(r"^sha256:[0-9a-f]{64}$")


def blob_ref(data: bytes) -> str:
    """The reference of `data` in every `BlobStore`: ``"sha256:" + hex``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_blob_ref(ref: str) -> bool:
    """Whether `ref` is a well-formed blob reference (a store looks up nothing else)."""
    return bool(_REF.match(ref))


@runtime_checkable
class BlobStore(Protocol):
    """Keeps large content (tool results, model messages) out of run logs.

    Blobs are content-addressed: a blob's reference is `blob_ref` of its bytes. The runtime
    writes them through `OffloadingStore` and the log keeps only the reference.

    Contract (certified by `psych_runtime.testing.blob_contract.BlobStoreContract`):
        - **Per tenant.** Every call names a tenant, and a tenant sees only its own blobs:
          `get` of another tenant's blob raises `BlobNotFound` exactly as for a blob that was
          never stored, and nothing in the answer tells the two apart. The same content
          stored by two tenants is two blobs.
        - `put` stores `data` for `tenant` and returns its reference. It is idempotent (the
          same content again returns the same reference and stores nothing new) and durable:
          when it returns, a `get` from any process sharing the store finds the blob. Blobs
          are immutable.
        - `get` returns exactly the bytes that were put. A reference that is not well formed
          (`is_blob_ref`) is `BlobNotFound`, and is never used to build a path or a key.
          Content that no longer matches its reference raises `StoreError`.
        - Anything the store cannot reach is `StoreUnavailable`.
    """

    async def put(self, tenant: str, data: bytes) -> str:
        """Store `data` for `tenant`; return its reference, ``"sha256:" + hex``."""
        ...

    async def get(self, tenant: str, ref: str) -> bytes:
        """The bytes of blob `ref` of `tenant`; `BlobNotFound` when the tenant has none."""
        ...
