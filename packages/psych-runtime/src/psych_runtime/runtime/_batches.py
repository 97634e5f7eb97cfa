"""Fitting staged records to a store's limits, and what to record instead of a record that
cannot be kept.

The common case costs nothing: a batch within the store's record count goes as it is, and
nothing is measured. Only when a store refuses a batch (`RecordTooLarge`) or a record cannot
be written as JSON text at all is each record measured, the ones no store could keep replaced
by failures the run can go on from, and the rest split into appends within the limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_core import PydanticSerializationError

from psych_core import (
    ApprovalDecided,
    Body,
    ModelCallFinished,
    Record,
    RunFailed,
    SignalIgnored,
    SignalReceived,
    StoreLimits,
    ToolCallFailed,
    ToolCallFinished,
)


@dataclass(frozen=True, slots=True)
class Unrecordable:
    """Why one staged record cannot be kept by the store."""

    seq: int
    problem: str
    too_large: bool


def parts(
    records: Sequence[Record], limits: StoreLimits, *, measured: bool
) -> list[tuple[Record, ...]]:
    """`records` cut into consecutive appends within `limits`, in order.

    Unmeasured, only the record count is looked at (free); measured, the bytes are counted
    as the stores count them: the UTF-8 bytes of each record's JSON.
    """
    if not measured and len(records) <= limits.max_append_records:
        return [tuple(records)]
    result: list[tuple[Record, ...]] = []
    current: list[Record] = []
    size = 0
    for record in records:
        record_size = len(record.model_dump_json().encode()) if measured else 0
        full = len(current) >= limits.max_append_records
        if current and (full or size + record_size > limits.max_append_bytes):
            result.append(tuple(current))
            current, size = [], 0
        current.append(record)
        size += record_size
    if current:
        result.append(tuple(current))
    return result


def unrecordable(records: Sequence[Record], limits: StoreLimits) -> list[Unrecordable]:
    """The records among `records` that no append could keep, and why."""
    found: list[Unrecordable] = []
    for record in records:
        try:
            size = len(record.model_dump_json().encode())
        except PydanticSerializationError as exc:
            found.append(Unrecordable(record.seq, _not_text(exc), too_large=False))
            continue
        if size > limits.max_record_bytes:
            problem = (
                f"it is {size} bytes of JSON, over the store's limit of "
                f"{limits.max_record_bytes} bytes per record"
            )
            found.append(Unrecordable(record.seq, problem, too_large=True))
    return found


def _not_text(exc: PydanticSerializationError) -> str:
    return f"it cannot be written as JSON text ({exc}); a string holds a lone surrogate"


def instead(run_id: str, body: Body, why: Unrecordable) -> list[Body] | None:
    """What to record in place of `body`, which the store cannot keep; None when the batch
    from `body` on must be dropped and the run failed (a model reply that cannot be kept:
    the calls it asked for cannot be recorded without it)."""
    where = f"run {run_id}, seq {why.seq}"
    advice = (
        "return less, or keep large results in a BlobStore (OffloadingStore, or session(blobs=...))"
        if why.too_large
        else "return valid Unicode text"
    )
    match body:
        case ToolCallFinished(call_id=call_id):
            return [
                ToolCallFailed(
                    call_id=call_id,
                    reason="result_too_large" if why.too_large else "invalid_result",
                    error=f"{where}: the result of call {call_id} was not recorded: "
                    f"{why.problem}; {advice}",
                )
            ]
        case SignalReceived(number=number, key=key):
            return [_ignored(where, number, key, why)]
        case ApprovalDecided(number=number, call_id=call_id):
            # The decision is single-use, so the call cannot wait for another: it fails.
            error = f"{where}: the decision on call {call_id} could not be recorded: {why.problem}"
            return [
                _ignored(where, number, f"approval:{call_id}", why),
                ToolCallFailed(call_id=call_id, reason="invalid_arguments", error=error),
            ]
        case ModelCallFinished():
            return None
        case _:
            return [
                RunFailed(
                    reason="unrecordable",
                    error=f"{where}: a {body.type} record could not be recorded: {why.problem}",
                )
            ]


def _ignored(where: str, number: int, key: str, why: Unrecordable) -> SignalIgnored:
    reason = f"{where}: inbox entry {number} could not be recorded: {why.problem}"
    return SignalIgnored(number=number, key=key, reason=reason)


def failed_reply(run_id: str, body: ModelCallFinished, why: Unrecordable) -> RunFailed:
    """The end of a run whose model reply the store cannot keep."""
    advice = (
        "keep large content in a BlobStore (OffloadingStore), or lower the model's "
        "max_output_tokens"
        if why.too_large
        else "the model client returned text that is not valid Unicode"
    )
    return RunFailed(
        reason="unrecordable_reply",
        error=f"run {run_id}, seq {why.seq}: the reply of model {body.model!r} could not be "
        f"recorded: {why.problem}; {advice}",
    )
