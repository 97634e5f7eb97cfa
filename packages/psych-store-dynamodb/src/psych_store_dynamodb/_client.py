"""The connection to DynamoDB: one aiobotocore client, every error translated to the core's.

Transient failures are retried here and by botocore: throttling and 5xx answers by botocore's
``standard`` retry mode (exponential backoff with jitter; transactions carry an idempotency
token, so a retried transaction that had committed is not applied twice), transaction
conflicts by `Connection.transact` and `Connection.call`. What is still failing after that
is `StoreUnavailable` (safe to retry later); what retrying cannot fix is `StoreError`.
"""

from __future__ import annotations

import asyncio
import io
import random
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from psych_adapter_kit import OpenedOnce
from psych_core import StoreError, StoreUnavailable

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient

_THROTTLED = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "TransactionInProgressException",
    }
)
_SERVER_FAULTS = frozenset({"InternalServerError", "ServiceUnavailable", "InternalFailure"})
_DENIED = frozenset(
    {
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "MissingAuthenticationTokenException",
        "IncompleteSignatureException",
    }
)
_TRANSIENT_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)

CONFLICT_RETRIES = 8
"""How often a write that met a concurrent transaction is tried again before giving up."""


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one item of a cancelled transaction was refused (``"None"``: it was not).

    Attributes:
        item: the item as it was when its condition failed (the request asks for it with
            ``ReturnValuesOnConditionCheckFailure=ALL_OLD``); None when it did not exist.
    """

    code: str
    item: dict[str, Any] | None = None

    @property
    def condition_failed(self) -> bool:
        return self.code == "ConditionalCheckFailed"


class ConditionFailed(Exception):
    """A single write's condition did not hold; `item` is the item as it was, if any."""

    def __init__(self, item: dict[str, Any] | None) -> None:
        super().__init__("condition failed")
        self.item = item


class TableMissing(StoreError):
    """The table (or the index a call names) does not exist: `migrate` creates it."""


class TableBusy(Exception):
    """The table is being created, updated or deleted (``ResourceInUseException``)."""


class Cancelled(Exception):
    """A transaction was cancelled; `reasons` line up with its items."""

    def __init__(self, reasons: list[Reason]) -> None:
        super().__init__(", ".join(reason.code for reason in reasons))
        self.reasons = reasons


async def backoff(attempt: int, base: float = 0.01, cap: float = 0.5) -> None:
    """Sleep before retry number `attempt` (0, 1, ...): exponential, with jitter."""
    await asyncio.sleep(min(cap, base * 2**attempt) * random.uniform(0.5, 1.0))


class Connection:
    """One DynamoDB client for one table, opened on first use in the running event loop.

    Args:
        table: the table every call addresses.
        session: an ``aioboto3.Session`` (credentials, profile, region).
        client_options: keyword arguments for ``session.client("dynamodb", ...)``:
            ``region_name``, ``endpoint_url``, ``config``.
    """

    def __init__(self, table: str, session: Any, client_options: dict[str, Any]) -> None:
        self.table = table
        self._session = session
        self._options = client_options
        self._client = OpenedOnce(self._open, self._closed_error)

    @property
    def where(self) -> str:
        """The table and where it is, for messages."""
        endpoint = self._options.get("endpoint_url") or "AWS"
        region = self._options.get("region_name") or "the session's region"
        return f"table {self.table!r} ({region}, {endpoint})"

    async def client(self) -> DynamoDBClient:
        """The open client (opened now if it is not yet)."""
        return await self._client.get()

    def _closed_error(self) -> StoreError:
        return StoreError(f"this DynamoDBStore ({self.where}) is closed; open a new one")

    async def _open(self, stack: AsyncExitStack) -> DynamoDBClient:
        try:
            context = self._session.client("dynamodb", **self._options)
            client = cast("DynamoDBClient", await stack.enter_async_context(context))
            client.meta.events.register("before-send.dynamodb", _stream_large_body)
        except BaseException as exc:
            raise self._translate("open", exc) from exc
        return client

    async def close(self) -> None:
        """Close the client; calling it again does nothing."""
        await self._client.close()

    async def call(self, operation: str, **request: Any) -> dict[str, Any]:
        """Call a DynamoDB operation (``"GetItem"``, ...) on the table, errors translated.

        A failed condition raises `ConditionFailed`, a cancelled transaction `Cancelled`.
        A write that met a concurrent transaction on its item is tried again.
        """
        client = await self.client()
        method = getattr(client, _snake(operation))
        for attempt in range(CONFLICT_RETRIES):
            try:
                return cast(dict[str, Any], await method(**request))
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code == "TransactionConflictException" and attempt + 1 < CONFLICT_RETRIES:
                    await backoff(attempt)
                    continue
                raise self._translate(operation, exc) from exc
            except (BotoCoreError, OSError, TimeoutError) as exc:
                raise self._translate(operation, exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def transact(self, items: Sequence[dict[str, Any]]) -> list[Reason] | None:
        """Write `items` in one ``TransactWriteItems``: None when it committed, the reasons
        of the refusal otherwise. Cancellations for conflicts alone are retried."""
        for attempt in range(CONFLICT_RETRIES):
            try:
                await self.call("TransactWriteItems", TransactItems=list(items))
                return None
            except Cancelled as cancelled:
                codes = {reason.code for reason in cancelled.reasons} - {"None"}
                if "ValidationError" in codes:
                    raise StoreError(
                        f"DynamoDB refused a transaction on {self.where} as invalid "
                        f"({', '.join(sorted(codes))}); this is a bug in psych-store-dynamodb, "
                        "please report it"
                    ) from None
                if codes and codes <= _TRANSIENT_REASONS:
                    await backoff(attempt)
                    continue
                return cancelled.reasons
        raise StoreUnavailable(
            f"DynamoDB kept cancelling a transaction on {self.where} for conflicts with other "
            f"writers ({CONFLICT_RETRIES} tries); try again"
        )

    def _translate(self, operation: str, exc: BaseException) -> BaseException:
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            message = error.get("Message", "")
            if code == "ConditionalCheckFailedException":
                return ConditionFailed(cast("dict[str, Any] | None", exc.response.get("Item")))
            if code == "TransactionCanceledException":
                raw = cast(list[dict[str, Any]], exc.response.get("CancellationReasons", []))
                return Cancelled([Reason(r.get("Code", "None"), r.get("Item")) for r in raw])
            if code in _THROTTLED or code == "TransactionConflictException":
                return StoreUnavailable(
                    f"DynamoDB throttled {operation} on {self.where} ({code}) after retries "
                    "with backoff; try again later, and raise the table's capacity (or use "
                    "on-demand capacity) if it keeps happening"
                )
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if code in _SERVER_FAULTS or status >= 500:
                return StoreUnavailable(
                    f"DynamoDB failed {operation} on {self.where} ({code}: {message}) after "
                    "retries; try again later"
                )
            if code == "ResourceInUseException":
                return TableBusy(message)
            if code == "ResourceNotFoundException":
                return TableMissing(
                    f"DynamoDB has no {self.where} ({message}); create it with "
                    "`await store.migrate()`, or check the table name, region and endpoint"
                )
            if code in _DENIED:
                return StoreError(
                    f"DynamoDB refused {operation} on {self.where}: {code}: {message}. Check "
                    "the credentials, and that they allow the actions the psych-store-dynamodb "
                    "README lists on the table and its indexes"
                )
            return StoreError(f"DynamoDB refused {operation} on {self.where}: {code}: {message}")
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return StoreError(
                f"no AWS credentials for {self.where}: configure them (environment, profile or "
                "role) or pass an aioboto3.Session that has them"
            )
        if isinstance(exc, NoRegionError):
            return StoreError(
                f"no AWS region for {self.where}: pass region_name= or set AWS_REGION"
            )
        if isinstance(exc, ConnectionError | HTTPClientError | OSError | TimeoutError):
            return StoreUnavailable(
                f"DynamoDB did not answer {operation} on {self.where}: {exc}. Check the "
                "endpoint, the region and the network; the call is safe to retry"
            )
        if isinstance(exc, BotoCoreError):
            return StoreError(f"{operation} on {self.where} failed: {exc}")
        return exc


_LARGE_BODY = 1024 * 1024


def _stream_large_body(request: Any, **_: Any) -> None:
    """Hand aiohttp a large request body (an append near the limits) as a stream.

    aiohttp warns that a body of more than 1 MiB given as bytes may hold up the event loop,
    and asks for a file-like object instead; botocore rewinds it before a retry.
    """
    if isinstance(request.body, bytes) and len(request.body) > _LARGE_BODY:
        request.body = io.BytesIO(request.body)


def _snake(operation: str) -> str:
    out = [operation[0].lower()]
    for char in operation[1:]:
        out.append(f"_{char.lower()}" if char.isupper() else char)
    return "".join(out)
