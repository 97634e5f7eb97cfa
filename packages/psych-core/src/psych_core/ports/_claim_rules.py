"""What every store's claim checks and writes alike: its arguments, checked before anything is
sent (`renew`'s ttl too), the two records a claim can append, and the log a first claim may
bring back."""

from __future__ import annotations

import datetime as dt

from pydantic import ValidationError

from psych_core._records import AttemptStarted, Record, attempts_exhausted


def check_ttl(ttl: dt.timedelta) -> dt.timedelta:
    """`ttl`, which must be positive: a lease that has expired when it is granted protects
    nothing, and the next claimer would take the run from under its attempt."""
    if ttl <= dt.timedelta(0):
        raise ValueError(
            f"a lease ttl must be positive, not {ttl}: pass how long an attempt may hold its "
            "run without renewing (Leases.ttl)"
        )
    return ttl


def check_claim(ttl: dt.timedelta, max_attempts: int) -> None:
    """Refuse what `Store.claim` cannot honour: fewer than one attempt, or a lease that is
    not positive (`check_ttl`)."""
    if max_attempts < 1:
        raise ValueError(
            f"max_attempts must be at least 1, not {max_attempts}: it is how many claims a run "
            "gets before it fails (Leases.max_attempts)"
        )
    check_ttl(ttl)


def started_record(run_id: str, seq: int, attempt: int, at: dt.datetime, worker_id: str) -> Record:
    """The `AttemptStarted` a claim appends at the run's next seq, numbered with the new
    attempt; `at` is the store's now."""
    return Record(
        run_id=run_id, seq=seq, attempt=attempt, at=at, body=AttemptStarted(worker_id=worker_id)
    )


def first_claim_log(record_0: bytes | str | None) -> tuple[Record, ...] | None:
    """`Claim.log` for a run's first claim, from its record 0 as the store keeps it: None when
    there is none or it does not decode, so that the attempt reads its log and meets what is
    wrong with it where it always did, never in the claim."""
    if record_0 is None:
        return None
    try:
        return (Record.model_validate_json(record_0),)
    except ValidationError:
        return None


def exhausted_record(
    run_id: str, seq: int, attempt: int, at: dt.datetime, claims: int, max_attempts: int
) -> Record:
    """The `RunFailed` (`attempts_exhausted`) a claim appends, instead of starting an attempt,
    to a run claimed `claims` times since it last suspended; it keeps the last attempt's
    number."""
    return Record(
        run_id=run_id,
        seq=seq,
        attempt=attempt,
        at=at,
        body=attempts_exhausted(run_id, claims, max_attempts),
    )
