"""DynamoDB's own limits, and the store limits that follow from them.

A transaction holds at most 100 items and 4 MB; an item is at most 400 KB, attribute names
and values included. An append is one transaction: the run row, one item per record, and
for the runs it notifies, each one's row and two items per notice (the inbox entry and the
key that makes it single-use).
"""

from __future__ import annotations

from psych_core import StoreLimits

TRANSACTION_ITEMS = 100
"""Items one ``TransactWriteItems`` may hold."""

TRANSACTION_BYTES = 4_000_000
"""Bytes one transaction may carry ("4 MB"; read as decimal megabytes, to be safe)."""

ITEM_BYTES = 400_000
"""Bytes one item may hold ("400 KB"; read as decimal kilobytes, to be safe)."""

ITEM_OVERHEAD = 4096
"""What a record's item holds besides its JSON, at most: its keys (the run id is at most
512 bytes, twice over), its attempt, its batch id (at most 512 bytes) and attribute names."""

MAX_RECORD_BYTES = 384 * 1024
"""The largest record JSON an item can hold with room for its keys: 393,216 bytes."""

MAX_APPEND_RECORDS = TRANSACTION_ITEMS - 1
"""Records in one append at most: the transaction's other item is the run row."""

MAX_APPEND_BYTES = TRANSACTION_BYTES - 64 * 1024 - TRANSACTION_ITEMS * ITEM_OVERHEAD
"""Record bytes in one append at most, leaving room for the run row and every item's keys."""

DEFAULT_LIMITS = StoreLimits(
    max_record_bytes=MAX_RECORD_BYTES,
    max_append_records=64,
    max_append_bytes=3 * 1024 * 1024,
)
"""What one append may carry unless the store is given other limits.

64 records leave room in the 100-item transaction for notices to 11 runs (3 items each) in
the same append; 3 MiB leaves room for their inbox entries within the 4 MB."""


def check_limits(limits: StoreLimits) -> StoreLimits:
    """Refuse limits DynamoDB cannot honour."""
    problems = []
    if not 0 < limits.max_record_bytes <= MAX_RECORD_BYTES:
        problems.append(f"max_record_bytes must be 1 to {MAX_RECORD_BYTES} (one item)")
    if not 0 < limits.max_append_records <= MAX_APPEND_RECORDS:
        problems.append(f"max_append_records must be 1 to {MAX_APPEND_RECORDS} (one transaction)")
    if not limits.max_record_bytes <= limits.max_append_bytes <= MAX_APPEND_BYTES:
        problems.append(
            f"max_append_bytes must be from max_record_bytes to {MAX_APPEND_BYTES} "
            "(one transaction)"
        )
    if problems:
        raise ValueError(f"DynamoDBStore cannot keep {limits}: " + "; ".join(problems))
    return limits
