"""psych_blob_s3: Psych Runtime's blob store on Amazon S3.

`S3BlobStore` keeps blobs (the large record bodies `OffloadingStore` moves out of run logs) as
objects in one S3 bucket, per tenant and named by the SHA-256 of their content, for request
handlers and workers on any number of hosts. Writes are conditional and never replace a blob;
large blobs go up in parts; reads are checked against their reference. It passes the blob
contract suite (`psych_runtime.testing.blob_contract`) unchanged.
"""

from psych_blob_s3._store import S3BlobStore

__all__ = ["S3BlobStore"]


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    S3BlobStore.__module__ = __name__


_claim_exports()
