"""Items as DynamoDB writes them (``{"S": ...}``, ``{"N": ...}``), and the run row read back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from psych_core import FINAL_STATUSES, RunRow, RunStatusName, StoreError, WaitingReason
from psych_store_dynamodb._layout import from_text, run_id_of

Item = dict[str, Any]
"""An item or key in DynamoDB's JSON: attribute name -> ``{"S": text}`` or ``{"N": digits}``."""


def s(text: str) -> dict[str, str]:
    """A string attribute value."""
    return {"S": text}


def n(number: int) -> dict[str, str]:
    """A number attribute value."""
    return {"N": str(number)}


def text_of(item: Mapping[str, Any], name: str) -> str | None:
    """A string attribute, or None when the item lacks it."""
    value = item.get(name)
    return None if value is None else cast(str, value["S"])


def int_of(item: Mapping[str, Any], name: str) -> int:
    """A number attribute the item must have."""
    return int(item[name]["N"])


@dataclass(frozen=True, slots=True)
class Row:
    """A run row as stored, with the few things the store needs that `RunRow` hides."""

    run: RunRow
    created_text: str
    """``created_at`` as written: part of the claim index's sort key."""
    idempotency_key: str | None = None
    continued: int | None = None
    """The number of the `Continued` mark in the run's inbox (the row's ``continued``
    attribute, written with the mark), or None."""

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def ended(self) -> bool:
        return self.run.status in FINAL_STATUSES

    @property
    def leased(self) -> bool:
        """Whether an attempt holds the lease (a final or suspended run never does)."""
        return self.run.lease_owner is not None and not self.ended


def parse_row(item: Mapping[str, Any]) -> Row:
    """The run row in an item the store wrote."""
    try:
        created = cast(str, item["created_at"]["S"])
        runnable = text_of(item, "runnable_at")
        expires = text_of(item, "lease_expires_at")
        run = RunRow(
            run_id=run_id_of(cast(str, item["pk"]["S"])),
            tenant=cast(str, item["tenant"]["S"]),
            agent=cast(str, item["agent"]["S"]),
            spec_version=cast(str, item["spec_version"]["S"]),
            status=cast(RunStatusName, item["status"]["S"]),
            waiting=cast("WaitingReason | None", text_of(item, "waiting")),
            parent_run_id=text_of(item, "parent_run_id"),
            attempt=int_of(item, "attempt"),
            lease_owner=text_of(item, "lease_owner"),
            lease_expires_at=None if expires is None else from_text(expires),
            runnable_at=None if runnable is None else from_text(runnable),
            next_seq=int_of(item, "next_seq"),
            inbox_last=int_of(item, "inbox_last"),
            created_at=from_text(created),
            updated_at=from_text(cast(str, item["updated_at"]["S"])),
            claims=int_of(item, "claims"),
        )
    except (KeyError, ValueError, TypeError) as exc:
        key = item.get("pk", {}).get("S", "?")
        raise StoreError(
            f"the run row {key!r} is not one this store wrote (missing or bad attribute: "
            f"{exc}); was the table changed by hand?"
        ) from None
    continued = item.get("continued")
    return Row(
        run=run,
        created_text=created,
        idempotency_key=text_of(item, "idempotency_key"),
        continued=None if continued is None else int(continued["N"]),
    )
