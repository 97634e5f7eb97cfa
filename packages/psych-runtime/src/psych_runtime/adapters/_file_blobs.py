"""`FileBlobStore`: blobs as files in a directory, shared by the processes of one host."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

from psych_core import BlobNotFound, StoreError, StoreUnavailable, blob_ref, is_blob_ref


class FileBlobStore:
    """A `BlobStore` in a directory: one file per blob, written atomically and durably.

    Layout: ``root/<tenant key>/<2 hex>/<64 hex>``. The tenant key is a hash of the tenant's
    name, so no tenant name reaches the filesystem and none can climb out of its directory;
    a reference is checked to be ``sha256:`` and 64 hex digits before any path is built from
    it. A blob is written to a temporary file, synced, and renamed into place (then the
    directory is synced), so a reader never sees part of one and a crash leaves none behind
    half written. Reads check the content against its reference.

    Every process that reads runs back (workers, the app's handlers) must see the same
    directory: a local disk for one host, a shared filesystem for several.

    Args:
        root: the directory; created when missing.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    async def put(self, tenant: str, data: bytes) -> str:
        """Write `data` for `tenant` unless it is there already; return its reference."""
        ref = blob_ref(data)
        await asyncio.to_thread(self._write, self._path(tenant, ref), data)
        return ref

    async def get(self, tenant: str, ref: str) -> bytes:
        """The bytes of `tenant`'s blob `ref`; `BlobNotFound` when it has none."""
        if not is_blob_ref(ref):
            raise BlobNotFound(ref)
        path = self._path(tenant, ref)
        data = await asyncio.to_thread(self._read, path, ref)
        if blob_ref(data) != ref:
            raise StoreError(
                f"blob {ref} at {path} does not match its reference (the file was changed or "
                "damaged on disk); restore it from a backup"
            )
        return data

    def _path(self, tenant: str, ref: str) -> Path:
        tenant_key = hashlib.sha256(tenant.encode()).hexdigest()[:32]
        digest = ref.removeprefix("sha256:")
        return self.root / tenant_key / digest[:2] / digest

    def _read(self, path: Path, ref: str) -> bytes:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise BlobNotFound(ref) from None
        except OSError as exc:
            raise StoreUnavailable(f"blob store at {self.root}: cannot read {path}: {exc}") from exc

    def _write(self, path: Path, data: bytes) -> None:
        if path.exists():
            return  # content-addressed: the file there holds these very bytes
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".part")
        except OSError as exc:
            raise StoreUnavailable(f"blob store at {self.root}: cannot write: {exc}") from exc
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
            directory = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise StoreUnavailable(
                f"blob store at {self.root}: cannot write {path}: {exc}"
            ) from exc

    def __repr__(self) -> str:
        return f"FileBlobStore({str(self.root)!r})"
