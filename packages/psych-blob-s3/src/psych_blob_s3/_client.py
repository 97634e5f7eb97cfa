"""The connection to S3: one aiobotocore client, every error translated to the core's.

Throttling (``SlowDown``), 5xx answers, request timeouts and dropped connections are retried by
botocore's ``standard`` retry mode (exponential backoff with jitter). What still fails after
that is `StoreUnavailable` (safe to retry later: every write here is idempotent); what retrying
cannot fix (a missing bucket, credentials, permissions) is `StoreError`, saying what to do.
Messages name the bucket, the region and the endpoint, and where the credentials came from,
never a key or a secret.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    HTTPClientError,
    IncompleteReadError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from psych_adapter_kit import OpenedOnce
from psych_core import StoreError, StoreUnavailable

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client

_THROTTLED = frozenset({"SlowDown", "ThrottlingException", "RequestLimitExceeded", "Throttling"})
_SERVER_FAULTS = frozenset({"InternalError", "ServiceUnavailable", "RequestTimeout"})
_MISSING = frozenset({"NoSuchKey", "NoSuchUpload", "NotFound", "404"})
_DENIED = frozenset(
    {
        "AccessDenied",
        "403",
        "Forbidden",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AllAccessDisabled",
    }
)
_BAD_CREDENTIALS = frozenset(
    {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"}
)
_WRONG_REGION = frozenset({"PermanentRedirect", "AuthorizationHeaderMalformed", "301"})

# Where botocore's standard chain found the credentials (`Credentials.method`), in words.
_SOURCES = {
    "explicit": "the access key given to the aioboto3.Session",
    "env": "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)",
    "shared-credentials-file": "the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, "
    "by default ~/.aws/credentials)",
    "config-file": "the AWS config file (AWS_CONFIG_FILE, by default ~/.aws/config)",
    "assume-role": "a role the profile assumes (role_arn)",
    "assume-role-with-web-identity": "a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE, "
    "AWS_ROLE_ARN)",
    "sso": "AWS IAM Identity Center (the profile's sso_* settings)",
    "container-role": "the container's role (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI)",
    "iam-role": "the instance's role (EC2 instance metadata)",
    "custom-process": "the profile's credential_process",
}
_CHAIN = (
    "keys given to the aioboto3.Session; AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the "
    "environment; a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE); the profile {profile} in "
    "the shared credentials and config files (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, by "
    "default ~/.aws/credentials and ~/.aws/config); a container role "
    "(AWS_CONTAINER_CREDENTIALS_*); the instance's role (EC2 instance metadata)"
)
PERMISSIONS = "s3:GetObject, s3:PutObject, s3:AbortMultipartUpload and s3:ListBucket"
"""What the store needs on the bucket (ListBucket: without it S3 answers a missing blob with
AccessDenied instead of NoSuchKey)."""


class Missing(Exception):
    """The object (or the multipart upload) a call named does not exist."""


class AlreadyThere(Exception):
    """A conditional write (``If-None-Match: *``) found the key taken: the blob is there (or
    the bucket `CreateBucket` was to make is, and is ours)."""


class WriteConflict(Exception):
    """Another conditional write of the same key was in progress (409): try again."""


class Connection:
    """One S3 client for one bucket, opened on first use in the running event loop.

    Args:
        bucket: the bucket every call addresses.
        session: an ``aioboto3.Session`` (credentials, profile, region).
        client_options: keyword arguments for ``session.client("s3", ...)``:
            ``region_name``, ``endpoint_url``, ``config``.
    """

    def __init__(self, bucket: str, session: Any, client_options: dict[str, Any]) -> None:
        self.bucket = bucket
        self._session = session
        self._options = client_options
        self._client = OpenedOnce(self._open, self._closed_error)
        self._credentials_from: str | None = None

    @property
    def where(self) -> str:
        """The bucket and where it is, for messages."""
        endpoint = self._options.get("endpoint_url") or "AWS"
        region = self._options.get("region_name")
        opened = self._client.opened
        if region is None and opened is not None:
            region = opened.meta.region_name  # the session's, once it is open
        return f"S3 bucket {self.bucket!r} ({region or "the session's region"}, {endpoint})"

    async def client(self) -> S3Client:
        """The open client (opened now if it is not yet)."""
        return await self._client.get()

    def _closed_error(self) -> StoreError:
        return StoreError(f"this S3BlobStore ({self.where}) is closed; open a new one")

    async def _open(self, stack: AsyncExitStack) -> S3Client:
        try:
            context = self._session.client("s3", **self._options)
            client = cast("S3Client", await stack.enter_async_context(context))
            # The client has resolved the credentials by now; the session keeps them, so
            # this asks no one. Only their source is kept, for messages.
            credentials = await self._session.get_credentials()
            self._credentials_from = getattr(credentials, "method", None)
        except BaseException as exc:
            translated = self.translate("open", exc)
            if translated is exc:
                raise
            raise translated from exc
        return client

    async def close(self) -> None:
        """Close the client; calling it again does nothing."""
        await self._client.close()

    async def call[T](self, operation: str, send: Callable[[S3Client], Awaitable[T]]) -> T:
        """``await send(client)``, its errors translated; `operation` names it in messages.

        Raises `Missing`, `AlreadyThere` or `WriteConflict` for the answers a caller acts on,
        `StoreUnavailable` or `StoreError` for the rest.
        """
        client = await self.client()
        try:
            return await send(client)
        except (BotoCoreError, ClientError, OSError, TimeoutError) as exc:
            raise self.translate(operation, exc) from exc

    def translate(self, operation: str, exc: BaseException) -> BaseException:
        """The core's error (or one of this module's) for what `operation` raised."""
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            message = str(error.get("Message", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            return self._refusal(operation, code, message, status)
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            profile = getattr(self._session, "profile_name", None) or "default"
            return StoreError(
                f"no AWS credentials for {self.where}: looked for, in this order, "
                f"{_CHAIN.format(profile=repr(profile))}. Set one of them, or pass "
                "session=aioboto3.Session(...) with the credentials to use"
            )
        if isinstance(
            exc,
            ConnectionError
            | HTTPClientError
            | ReadTimeoutError
            | ResponseStreamingError
            | IncompleteReadError
            | OSError
            | TimeoutError,
        ):
            return StoreUnavailable(
                f"S3 did not answer {operation} on {self.where}: {exc}. Check the endpoint, "
                "the region and the network; the call is safe to retry"
            )
        if isinstance(exc, BotoCoreError):
            return StoreError(f"{operation} on {self.where} failed: {exc}")
        return exc

    def _refusal(self, operation: str, code: str, message: str, status: int) -> BaseException:
        if code == "PreconditionFailed" or status == 412:
            return AlreadyThere()
        if code == "ConditionalRequestConflict":
            return WriteConflict()
        if code == "BucketAlreadyOwnedByYou":
            return AlreadyThere()
        if code == "BucketAlreadyExists":
            return StoreError(
                f"{self.where} cannot be created: the name belongs to another AWS account "
                "(bucket names are global). Choose another name"
            )
        if code == "NoSuchBucket":
            return StoreError(
                f"{self.where} does not exist: create it (`await store.create_bucket()` "
                "creates it with the lifecycle rule the psych-blob-s3 README describes, or "
                "use your infrastructure's tools), or check the bucket name, region and "
                "endpoint. The store never creates a bucket by itself"
            )
        if code in _MISSING:
            return Missing(code)
        if code in _THROTTLED:
            return StoreUnavailable(
                f"S3 throttled {operation} on {self.where} ({code}) after retries with "
                "backoff; try again later"
            )
        if code in _SERVER_FAULTS or status >= 500:
            return StoreUnavailable(
                f"S3 failed {operation} on {self.where} ({code}: {message}) after retries; "
                "try again later"
            )
        if code in _DENIED:
            return StoreError(f"S3 refused {operation} on {self.where}: {self._denial(code)}")
        if code in _WRONG_REGION:
            return StoreError(
                f"S3 refused {operation} on {self.where}: {code}: {message}. The bucket is in "
                "another region: pass region= (or set AWS_REGION) to the bucket's"
            )
        return StoreError(f"S3 refused {operation} on {self.where}: {code}: {message}")

    def _denial(self, code: str) -> str:
        source = _SOURCES.get(self._credentials_from or "", self._credentials_from)
        came_from = f"the credentials came from {source}" if source else "no credentials"
        if code in _BAD_CREDENTIALS:
            return (
                f"{code}: the credentials are not valid ({came_from}). Check them (an "
                "expired session token is renewed by the source that issued it), or pass "
                "session=aioboto3.Session(...) with other credentials"
            )
        if code in ("403", "Forbidden"):
            return (
                f"403 Forbidden, without a reason (S3 gives none to a HEAD request): the "
                f"credentials are not valid, or do not allow {PERMISSIONS} on the bucket and "
                f"its objects ({came_from})"
            )
        return (
            f"{code}: access denied ({came_from}). Check that they allow {PERMISSIONS} on the "
            "bucket and its objects"
        )
