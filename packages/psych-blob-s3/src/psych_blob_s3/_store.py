"""`S3BlobStore`: blobs as objects in one S3 bucket, shared by every process and host."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from aiobotocore.config import AioConfig

from psych_adapter_kit import Backoff
from psych_blob_s3._client import (
    AlreadyThere,
    Connection,
    Missing,
    WriteConflict,
)
from psych_blob_s3._keys import check_prefix, object_key, tenant_key
from psych_blob_s3._upload import MiB, Uploads, exists, multipart, put_object
from psych_core import BlobNotFound, BlobStore, StoreError, StoreUnavailable, blob_ref, is_blob_ref
from psych_core.ports import Closing

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client
    from types_aiobotocore_s3.literals import BucketLocationConstraintType
    from types_aiobotocore_s3.type_defs import CreateBucketConfigurationTypeDef

_default_session: Any = None

_CONFLICT_TRIES = 6
_CONFLICT_PAUSES = Backoff(first=0.05, longest=1.0)
_HASH_IN_THREAD = MiB  # hashing a larger blob on the event loop would hold it up (ms per MB)
_INCOMPLETE_UPLOADS_RULE = "psych-abort-incomplete-uploads"


def _shared_session() -> Any:
    """One aioboto3 session for every store made without one: botocore loads S3's service
    description once per session, which takes longer than most calls."""
    global _default_session
    if _default_session is None:
        import aioboto3  # type: ignore[import-untyped]  # aioboto3 ships no type information

        _default_session = aioboto3.Session()
    return _default_session


async def _reference(data: bytes) -> str:
    if len(data) > _HASH_IN_THREAD:
        return await asyncio.to_thread(blob_ref, data)  # hashlib lets go of the GIL
    return blob_ref(data)


class S3BlobStore(BlobStore, Closing):
    """A `BlobStore` in one S3 bucket, shared by handlers and workers on any number of hosts.

    Each blob is one object, ``{prefix}{tenant key}/{64 hex}``: the tenant key is the
    SHA-256 (hex) of the tenant's name, so no name, however written (``/``, ``..``, another
    tenant's key), reaches a key or lets one tenant name another's objects; every key has the
    same length, and listings do not show tenant names (`tenant_prefix` gives a tenant's
    folder). A reference is checked (`is_blob_ref`) before a key is built from it: a malformed
    one is `BlobNotFound` without a request.

    `put` asks whether the blob is there (HeadObject) and sends it only if not: one
    PutObject up to `multipart_threshold` bytes, a multipart upload above it (`part_size`
    parts, `concurrency` at a time; aborted if anything fails, so no parts are left). Both
    writes are conditional (``If-None-Match: *``): a blob is never replaced, and concurrent
    puts of one content all succeed. When `put` returns, S3 has the blob durably and every
    reader finds it (S3 reads are strongly consistent). `get` checks the content against its
    reference: an object changed in the bucket is a `StoreError`, never wrong bytes.

    The store never creates its bucket: a missing bucket is a `StoreError` that says so.
    `create_bucket` makes it, once, at deployment. Call `close` (or use ``async with``) when
    done; a store belongs to the event loop it is first used in. `OffloadingStore` does not
    close the blob store it was given.

    Args:
        bucket: the bucket's name.
        prefix: what every key starts with (``""`` for none); the bucket may hold other data
            beside it.
        endpoint_url: another endpoint than AWS's: moto, MinIO, another S3-compatible service.
        region: the AWS region; by default the session's (``AWS_REGION``, profile).
        session: an ``aioboto3.Session`` with the credentials to use; by default the standard
            chain (environment, profile, web identity, container or instance role).
        multipart_threshold: the largest blob sent in one PutObject, in bytes; a larger one is
            sent in parts.
        part_size: the size of each part but the last (5 MiB to 5 GiB; larger for blobs that
            would need more than 10,000 parts).
        concurrency: how many parts of one blob are sent at a time.
        retries: how often botocore retries a throttled or failed request, with backoff,
            before the call raises `StoreUnavailable`.
        connect_timeout: seconds to connect before a request fails.
        read_timeout: seconds to wait for an answer (or the next bytes of one) before a
            request fails.
        max_connections: the size of the HTTP connection pool.
    """

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "psych-blobs/",
        endpoint_url: str | None = None,
        region: str | None = None,
        session: Any = None,
        multipart_threshold: int = 8 * MiB,
        part_size: int = 8 * MiB,
        concurrency: int = 4,
        retries: int = 6,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        max_connections: int = 10,
    ) -> None:
        if not bucket:
            raise ValueError("bucket must name an S3 bucket")
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, not {retries}")
        self._prefix = check_prefix(prefix)
        self._uploads = Uploads(multipart_threshold, part_size, concurrency)
        config = AioConfig(
            retries={"mode": "standard", "total_max_attempts": retries + 1},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=max_connections,
        )
        options: dict[str, Any] = {"config": config}
        if region is not None:
            options["region_name"] = region
        if endpoint_url is not None:
            options["endpoint_url"] = endpoint_url
        self._conn = Connection(bucket, session or _shared_session(), options)

    @property
    def bucket(self) -> str:
        """The bucket's name."""
        return self._conn.bucket

    @property
    def prefix(self) -> str:
        """What every key of this store starts with."""
        return self._prefix

    def tenant_prefix(self, tenant: str) -> str:
        """The key prefix of `tenant`'s blobs, ``{prefix}{sha256(tenant) hex}/``: every blob
        of the tenant, and nothing else, has a key that starts with it (for a lifecycle rule,
        an inventory, or deleting a tenant's data)."""
        return f"{self._prefix}{tenant_key(tenant)}/"

    def __repr__(self) -> str:
        return f"S3BlobStore({self._conn.where}, prefix={self._prefix!r})"

    async def put(self, tenant: str, data: bytes) -> str:
        """Store `data` for `tenant` unless it is there already; return its reference."""
        ref = await _reference(data)
        key = object_key(self._prefix, tenant, ref)
        pause = _CONFLICT_PAUSES.first
        for _ in range(_CONFLICT_TRIES):
            if await exists(self._conn, key, len(data)):
                return ref
            try:
                if len(data) > self._uploads.threshold:
                    await multipart(self._conn, key, data, self._uploads)
                else:
                    await put_object(self._conn, key, data)
            except AlreadyThere:
                pass  # another put of the same content completed first: the blob is there
            except WriteConflict:
                # Another put of the same content is completing: look again after a pause.
                await asyncio.sleep(pause)
                pause = _CONFLICT_PAUSES.after(pause)
                continue
            return ref
        raise StoreUnavailable(
            f"S3 kept answering ConditionalRequestConflict for blob {ref} in "
            f"{self._conn.where} ({_CONFLICT_TRIES} tries): other writers of the same "
            "content did not finish; try again"
        )

    async def get(self, tenant: str, ref: str) -> bytes:
        """The bytes of `tenant`'s blob `ref`; `BlobNotFound` when it has none."""
        if not is_blob_ref(ref):
            raise BlobNotFound(ref)
        key = object_key(self._prefix, tenant, ref)

        async def fetch(client: S3Client) -> bytes:
            answer = await client.get_object(Bucket=self._conn.bucket, Key=key)
            async with answer["Body"] as body:
                return await body.read()

        try:
            data = await self._conn.call("GetObject", fetch)
        except Missing:
            raise BlobNotFound(ref) from None
        if await _reference(data) != ref:
            raise StoreError(
                f"blob {ref} (object {key} in {self._conn.where}) does not match its "
                "reference: the object was changed or damaged in the bucket; restore it from "
                "a backup or an earlier version"
            )
        return data

    async def create_bucket(self) -> None:
        """Create the bucket when it does not exist, private, with a lifecycle rule that
        removes multipart uploads left incomplete for a day under `prefix` (a process that
        crashed mid-upload cannot abort its own). An existing bucket is left as it is.

        For deployment scripts and tests: the store never calls it itself. Needs
        ``s3:CreateBucket`` and ``s3:PutLifecycleConfiguration``.
        """
        conn = self._conn
        try:
            await conn.call("HeadBucket", lambda c: c.head_bucket(Bucket=conn.bucket))
            return
        except Missing:
            pass
        client = await conn.client()
        region = client.meta.region_name
        try:
            if region in (None, "us-east-1"):  # S3's first region takes no location
                await conn.call("CreateBucket", lambda c: c.create_bucket(Bucket=conn.bucket))
            else:
                where: CreateBucketConfigurationTypeDef = {
                    "LocationConstraint": cast("BucketLocationConstraintType", region)
                }
                await conn.call(
                    "CreateBucket",
                    lambda c: c.create_bucket(Bucket=conn.bucket, CreateBucketConfiguration=where),
                )
        except AlreadyThere:
            return  # another process created it a moment ago, and adds the rule
        await conn.call(
            "PutBucketLifecycleConfiguration",
            lambda c: c.put_bucket_lifecycle_configuration(
                Bucket=conn.bucket,
                LifecycleConfiguration={
                    "Rules": [
                        {
                            "ID": _INCOMPLETE_UPLOADS_RULE,
                            "Status": "Enabled",
                            "Filter": {"Prefix": self._prefix},
                            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                        }
                    ]
                },
            ),
        )

    async def close(self) -> None:
        """Close the HTTP connections. Calling it again does nothing."""
        await self._conn.close()
