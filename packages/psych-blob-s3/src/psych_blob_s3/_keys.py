"""Where a blob lives in the bucket: ``{prefix}{tenant key}/{64 hex}``.

The tenant key is the SHA-256 of the tenant's name (hex), never the name itself:

- **No tenant can name another's keys.** Every tenant key is 64 hex digits and no tenant name
  reaches the key, so a name holding ``/``, ``..``, ``%2F``, another tenant's key or a whole
  key is only hashed: it cannot climb out of its own ``{tenant key}/`` folder or into another.
  (Percent-encoding would keep names readable, but it lets ``.`` segments through, which HTTP
  clients normalise out of URLs, and a long name would pass S3's 1,024-byte key limit.)
- **Every key has one length**, well within that limit, whatever the tenant's name.
- **Listings do not show tenant names** (often a customer's), only their hashes;
  `S3BlobStore.tenant_prefix` gives a tenant's folder, for a lifecycle rule or a deletion.

A reference is checked (`psych_core.is_blob_ref`) before any key is built from it.
"""

from __future__ import annotations

import hashlib

_KEY_BYTES = 1024  # S3's longest object key, in bytes of UTF-8
_TAIL = 64 + 1 + 64  # tenant key, "/", digest


def check_prefix(prefix: str) -> str:
    """`prefix` if every key it starts can be sent as it is; ValueError otherwise."""
    segments = prefix.split("/")
    if any(segment in (".", "..") for segment in segments):
        # HTTP clients (aiohttp among them) resolve dot segments of a URL's path, so the
        # request would name another key than the one the store means.
        raise ValueError(f"prefix {prefix!r} has a '.' or '..' segment; S3 keys here may not")
    if prefix.startswith("/"):
        raise ValueError(f"prefix {prefix!r} starts with '/'; leave the slash out")
    if len(prefix.encode()) + _TAIL > _KEY_BYTES:
        raise ValueError(
            f"prefix {prefix!r} is too long: S3 keys stop at {_KEY_BYTES} bytes, and a blob's "
            f"key adds {_TAIL} bytes to it"
        )
    return prefix


def tenant_key(tenant: str) -> str:
    """The tenant's folder name: 64 hex digits of SHA-256."""
    # surrogatepass: any str has bytes, and different strings have different bytes.
    return hashlib.sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()


def object_key(prefix: str, tenant: str, ref: str) -> str:
    """The key of `tenant`'s blob `ref` (a well-formed reference: checked by the caller)."""
    return f"{prefix}{tenant_key(tenant)}/{ref.removeprefix('sha256:')}"
