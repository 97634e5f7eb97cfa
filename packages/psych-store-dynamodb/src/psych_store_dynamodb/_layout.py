"""The single-table layout: keys, index attributes and how times are written.

Every item lives in one table keyed by ``pk`` (partition) and ``sk`` (sort), both strings.
A run's row, records, inbox entries and signal keys share the partition ``RUN#{run_id}``, so
one consistent `Query` reads a log and one partition holds everything a delete must remove.
The package README draws the whole design; this module is its single source in code.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
from typing import Any

# -- keys ----------------------------------------------------------------------------------

ROW_SK = "#RUN"
"""The sort key of a run's row (``#`` sorts before the letters of the other prefixes)."""

SPEC_SK = "#SPEC"
IDEM_SK = "#IDEM"
SCHEMA_PK = "#SCHEMA"
SCHEMA_SK = "#SCHEMA"

_SEQ_WIDTH = 20
LOG_FIRST = "LOG#" + "0" * _SEQ_WIDTH
LOG_LAST = "LOG#" + "9" * _SEQ_WIDTH
INBOX_LAST = "INBOX#" + "9" * _SEQ_WIDTH

MAX_RUN_ID_BYTES = 512
"""The longest run id: it is part of index sort keys, which DynamoDB caps at 1024 bytes."""

MAX_BATCH_ID_BYTES = 512


def run_pk(run_id: str) -> str:
    """The partition of a run: its row, records, inbox entries and signal keys."""
    return f"RUN#{run_id}"


def run_id_of(pk: str) -> str:
    """The run id in a run partition key."""
    return pk.removeprefix("RUN#")


def log_sk(seq: int) -> str:
    """A record's sort key: zero-padded, so sort order is seq order."""
    return f"LOG#{seq:0{_SEQ_WIDTH}d}"


def seq_of(sk: str) -> int:
    """The seq in a record's sort key."""
    return int(sk.removeprefix("LOG#"))


def inbox_sk(number: int) -> str:
    """An inbox entry's sort key, in number order."""
    return f"INBOX#{number:0{_SEQ_WIDTH}d}"


def signal_key_sk(key: str) -> str:
    """The item that makes a signal key single-use (hashed: keys may be long, any text)."""
    return "KEY#" + hashlib.sha256(key.encode()).hexdigest()


def spec_pk(version: str) -> str:
    """A spec's partition, by version."""
    return f"SPEC#{version}"


def idempotency_pk(tenant: str, key: str) -> str:
    """An idempotency key's partition: hashed, so any tenant and key text fits, spread evenly."""
    digest = hashlib.sha256(json.dumps([tenant, key]).encode()).hexdigest()
    return f"IDEM#{digest}"


def shard_of(run_id: str, shards: int) -> str:
    """The claim-index shard of a run: a stable hash of its id, "0" to ``shards - 1``."""
    digest = hashlib.sha256(run_id.encode()).digest()
    return str(int.from_bytes(digest[:8], "big") % shards)


# -- index attributes ----------------------------------------------------------------------

CLAIMABLE_INDEX = "claimable"
"""Sparse: runs that are claimable at some time (``shard``, ``claim_at``)."""

DUE_INDEX = "due"
"""Sparse: waiting runs that are claimable at some time (``shard``, ``wake_at``)."""

TENANT_INDEX = "by_tenant"
"""Every run, per tenant, by creation (``tenant``, ``created_key``); projects ``status``."""

PARENT_INDEX = "by_parent"
"""Sparse: child runs, per parent, by creation (``parent_run_id``, ``created_key``)."""


def claim_key(runnable_at: str, created_at: str) -> str:
    """The claim index's sort key: claimable time, then creation (oldest first)."""
    return f"{runnable_at}|{created_at}"


def claimable_bound(now: dt.datetime) -> str:
    """Claim keys below this are claimable at `now` (``}`` sorts after ``|``)."""
    return f"{to_text(now, 'now')}}}"


def created_key(created_at: str, run_id: str) -> str:
    """The listing indexes' sort key: creation time, then the run id (unique)."""
    return f"{created_at}|{run_id}"


# -- times ---------------------------------------------------------------------------------

NEVER_BEFORE = dt.datetime.min.replace(tzinfo=dt.UTC)
"""``runnable_at`` of a run that is claimable at once ("-infinity")."""


def to_text(moment: dt.datetime, what: str) -> str:
    """A UTC time as fixed-width ISO 8601 text with microseconds: text order is time order."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime (UTC), not {moment!r}")
    utc = moment.astimezone(dt.UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond:06d}Z"
    )


def from_text(text: str) -> dt.datetime:
    """The time `to_text` wrote."""
    return dt.datetime.fromisoformat(text)


NEVER_BEFORE_TEXT = to_text(NEVER_BEFORE, "NEVER_BEFORE")


# -- listing cursors -----------------------------------------------------------------------


def encode_cursor(key: str) -> str:
    """An opaque cursor for the listing position after `key`."""
    return base64.urlsafe_b64encode(json.dumps({"v": 1, "after": key}).encode()).decode()


def decode_cursor(cursor: str) -> str:
    """The listing position a cursor from `encode_cursor` names."""
    try:
        data: Any = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        after = data["after"]
        if data.get("v") != 1 or not isinstance(after, str):
            raise ValueError(after)
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeError):
        raise ValueError(
            f"list_runs: cursor {cursor!r} was not issued by this store; pass a "
            "Page.next_cursor exactly as list_runs returned it, or None for the first page"
        ) from None
    return after
