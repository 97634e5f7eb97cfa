"""Writing one blob: a conditional PutObject, or a multipart upload above the threshold.

Both are conditional writes (``If-None-Match: *``, on PutObject and on
CompleteMultipartUpload): a blob is never replaced, so a put racing another put of the same
content (which has the same key) leaves the first one in place, and both return. A multipart
upload that fails or is cancelled is aborted, so its parts are not left in the bucket (and
billed); if even the abort fails, the error says so, and the bucket's lifecycle rule
(`S3BlobStore.create_bucket` adds one) removes the parts a day later.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from psych_blob_s3._client import AlreadyThere, Connection, Missing
from psych_core import StoreError, StoreUnavailable

if TYPE_CHECKING:
    from types_aiobotocore_s3.type_defs import CompletedPartTypeDef

MiB = 1024 * 1024
MIN_PART_SIZE = 5 * MiB
"""S3's smallest part (but the last)."""
MAX_PART_SIZE = 5 * 1024 * MiB
"""S3's largest part, and its largest single PutObject."""
MAX_PARTS = 10_000
"""S3's most parts in one upload."""


@dataclass(frozen=True, slots=True)
class Uploads:
    """How blobs are sent: one PutObject up to `threshold` bytes, parts of `part_size`
    above it, `concurrency` parts at a time."""

    threshold: int
    part_size: int
    concurrency: int

    def __post_init__(self) -> None:
        if not 0 <= self.threshold <= MAX_PART_SIZE:
            raise ValueError(
                f"multipart_threshold must be 0 to {MAX_PART_SIZE} bytes (S3's largest "
                f"single upload), not {self.threshold}"
            )
        if not MIN_PART_SIZE <= self.part_size <= MAX_PART_SIZE:
            raise ValueError(
                f"part_size must be {MIN_PART_SIZE} (5 MiB) to {MAX_PART_SIZE} (5 GiB) bytes, "
                f"as S3 requires of every part but the last, not {self.part_size}"
            )
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be 1 or more, not {self.concurrency}")

    def parts(self, size: int) -> list[tuple[int, int]]:
        """(start, end) of each part of a blob of `size` bytes: at most `MAX_PARTS`."""
        part = max(self.part_size, math.ceil(size / MAX_PARTS))
        return [(start, min(start + part, size)) for start in range(0, size, part)]


async def exists(conn: Connection, key: str, size: int) -> bool:
    """Whether `key` holds a blob; `StoreError` when it holds one of another size (a blob's
    key is its content's hash, so it can only have been damaged or replaced)."""
    try:
        head = await conn.call("HeadObject", lambda c: c.head_object(Bucket=conn.bucket, Key=key))
    except Missing:
        return False
    if head["ContentLength"] != size:
        raise StoreError(
            f"the object {key} in {conn.where} has {head['ContentLength']} bytes, not the "
            f"{size} of the blob it is named after: it was changed in the bucket. Delete it "
            "(the blob is written again by the next put of its content) or restore it"
        )
    return True


async def put_object(conn: Connection, key: str, data: bytes) -> None:
    """One conditional PutObject; `AlreadyThere` when the key is taken."""
    await conn.call(
        "PutObject",
        lambda c: c.put_object(Bucket=conn.bucket, Key=key, Body=data, IfNoneMatch="*"),
    )


async def multipart(conn: Connection, key: str, data: bytes, uploads: Uploads) -> None:
    """A multipart upload of `data`, completed conditionally; aborted if anything fails."""
    created = await conn.call(
        "CreateMultipartUpload",
        lambda c: c.create_multipart_upload(Bucket=conn.bucket, Key=key),
    )
    upload_id = created["UploadId"]
    try:
        parts = await _send_parts(conn, key, upload_id, data, uploads)
        await conn.call(
            "CompleteMultipartUpload",
            lambda c: c.complete_multipart_upload(
                Bucket=conn.bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
                IfNoneMatch="*",
            ),
        )
    except AlreadyThere:
        # Another put of the same content completed first; S3 keeps this upload open.
        await _abort(conn, key, upload_id)
        raise
    except Missing as gone:
        raise StoreUnavailable(
            f"the multipart upload {upload_id} of {key} in {conn.where} was aborted by "
            "another client while it ran (NoSuchUpload); try again"
        ) from gone
    except BaseException as exc:
        # Cancellation too: the parts sent so far would stay in the bucket otherwise.
        try:
            await _abort(conn, key, upload_id)
        except Exception as abort:
            exc.add_note(
                f"The upload {upload_id} of {key} could not be aborted ({abort}): its parts "
                "stay in the bucket until its lifecycle rule (AbortIncompleteMultipartUpload) "
                "removes them, or until ListMultipartUploads and AbortMultipartUpload do"
            )
        raise


async def _send_parts(
    conn: Connection, key: str, upload_id: str, data: bytes, uploads: Uploads
) -> list[CompletedPartTypeDef]:
    gate = asyncio.Semaphore(uploads.concurrency)

    async def send(number: int, start: int, end: int) -> CompletedPartTypeDef:
        async with gate:
            chunk = data[start:end]  # sliced under the gate: at most `concurrency` copies
            sent = await conn.call(
                "UploadPart",
                lambda c: c.upload_part(
                    Bucket=conn.bucket,
                    Key=key,
                    UploadId=upload_id,
                    PartNumber=number,
                    Body=chunk,
                ),
            )
            return {"PartNumber": number, "ETag": sent["ETag"]}

    tasks = [
        asyncio.create_task(send(number, start, end))
        for number, (start, end) in enumerate(uploads.parts(len(data)), start=1)
    ]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        # One part failed (or the put was cancelled): stop the others before the abort, so
        # none lands after it.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _abort(conn: Connection, key: str, upload_id: str) -> None:
    with contextlib.suppress(Missing):  # aborted or completed already
        await conn.call(
            "AbortMultipartUpload",
            lambda c: c.abort_multipart_upload(Bucket=conn.bucket, Key=key, UploadId=upload_id),
        )
