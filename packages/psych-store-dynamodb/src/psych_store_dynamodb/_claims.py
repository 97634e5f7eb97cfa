"""Claims and leases: the claim index, a conditional transaction re-checked on the base item,
heartbeats and releases.

DynamoDB has no server clock, so "now" is the caller's. A claim finds candidates in the sparse
claim index (eventually consistent), reads the candidate's row consistently, and writes the
new attempt in one transaction whose condition re-checks the row exactly as read: same
attempt, same next seq, still claimable at the caller's now. Two claimers racing for a run
write the same row under the same condition; DynamoDB lets exactly one transaction through.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from psych_core import Claim, LeaseLost, RenewResult, RunNotFound
from psych_core.ports import check_claim, check_ttl, exhausted_record, started_record
from psych_store_dynamodb._client import ConditionFailed
from psych_store_dynamodb._expr import Update
from psych_store_dynamodb._layout import NEVER_BEFORE_TEXT, claim_key, to_text
from psych_store_dynamodb._rows import Row, int_of, n, parse_row, s
from psych_store_dynamodb._table import Table

_CANDIDATES = 8
"""Candidates read from the claim index at once: racing claimers spread over them."""

_EXPIRED_CANDIDATES = 32
"""Runs claimable at a time (not "at once") read first, to find those whose lease expired."""

_ROUNDS = 3
"""How often a claim reads the index again after losing every candidate to other claimers."""


def _claimable(row: Row | None, now: dt.datetime) -> bool:
    if row is None or row.ended:
        return False
    runnable = row.run.runnable_at
    return runnable is not None and runnable <= now


async def claim(
    table: Table,
    worker_id: str,
    ttl: dt.timedelta,
    run_id: str | None,
    max_attempts: int,
) -> Claim | None:
    """Take the oldest claimable run (or only `run_id`); see `Store.claim`."""
    check_claim(ttl, max_attempts)
    if run_id is not None:
        return await _claim_one(table, worker_id, ttl, run_id, max_attempts)
    for _ in range(_ROUNDS):
        now = table.clock()
        # A run whose lease expired first (its row still names its owner: its worker died
        # with it started), among the runs claimable at a time rather than "at once" (expired
        # leases, due waits, runs released to a time; the index projects no owner, so each is
        # read); then the oldest claimable run.
        timed, candidates = await asyncio.gather(
            table.claimable_ids(now, _EXPIRED_CANDIDATES, timed_only=True),
            table.claimable_ids(now, _CANDIDATES),
        )
        read = dict(zip(timed, await asyncio.gather(*map(table.get_row, timed)), strict=True))
        expired = [run for run, row in read.items() if row is not None and row.leased]
        if not expired and not candidates:
            return None
        for candidate in [*expired, *(c for c in candidates if c not in expired)]:
            row = read.get(candidate) or await table.get_row(candidate)
            if row is None or not _claimable(row, now):
                continue  # the index lags, or another claimer was first
            if row.run.claims >= max_attempts:
                await _exhaust(table, row, max_attempts, now)
                continue
            won = await _start(table, row, worker_id, ttl, now)
            if won is not None:
                return won
    return None


async def _claim_one(
    table: Table, worker_id: str, ttl: dt.timedelta, run_id: str, max_attempts: int
) -> Claim | None:
    for _ in range(_ROUNDS):
        now = table.clock()
        row = await table.get_row(run_id)
        if row is None or not _claimable(row, now):
            return None
        if row.run.claims >= max_attempts:
            if await _exhaust(table, row, max_attempts, now):
                return None
            continue
        won = await _start(table, row, worker_id, ttl, now)
        if won is not None:
            return won
    return None


def _guarded(table: Table, row: Row, now: dt.datetime, update: Update) -> dict[str, Any]:
    """The row's update, on condition that the row is still as it was read and claimable."""
    update.equal("attempt", n(row.run.attempt))
    update.equal("next_seq", n(row.run.next_seq))
    update.require(f"{update.name('runnable_at')} <= {update.value(s(to_text(now, 'now')))}")
    return {
        "Update": {"TableName": table.name, "Key": table.row_key(row.run_id), **update.fields()}
    }


async def _start(
    table: Table, row: Row, worker_id: str, ttl: dt.timedelta, now: dt.datetime
) -> Claim | None:
    run = row.run
    attempt = run.attempt + 1
    expires = now + ttl
    record = started_record(run.run_id, run.next_seq, attempt, now, worker_id)
    lease = to_text(expires, "lease expiry")
    update = Update()
    update.set("attempt", n(attempt))
    update.set("status", s("running"))
    update.set("lease_owner", s(worker_id))
    update.set("lease_expires_at", s(lease))
    update.set("runnable_at", s(lease))
    update.set("claim_at", s(claim_key(lease, row.created_text)))
    update.set("next_seq", n(run.next_seq + 1))
    update.set("updated_at", s(to_text(now, "now")))
    update.set("claims", n(run.claims + 1))
    update.remove("waiting", "wake_at")
    items = [
        _guarded(table, row, now, update),
        table.record_put(run.run_id, run.next_seq, attempt, record.model_dump_json()),
    ]
    if await table.conn.transact(items) is not None:
        return None  # another claimer won, or the run changed since it was read
    table.hints.put(run.run_id, row.created_text, run.inbox_last)
    return Claim(run.run_id, run.tenant, attempt, expires, record, run.inbox_last)


async def _exhaust(table: Table, row: Row, max_attempts: int, now: dt.datetime) -> bool:
    """Fail a run out of attempts, as the claim that found it; False if the run changed."""
    run = row.run
    record = exhausted_record(run.run_id, run.next_seq, run.attempt, now, run.claims, max_attempts)
    update = Update()
    update.set("status", s("failed"))
    update.set("next_seq", n(run.next_seq + 1))
    update.set("updated_at", s(to_text(now, "now")))
    update.remove(
        "waiting", "lease_owner", "lease_expires_at", "runnable_at", "claim_at", "wake_at"
    )
    items = [
        _guarded(table, row, now, update),
        table.record_put(run.run_id, run.next_seq, run.attempt, record.model_dump_json()),
    ]
    return await table.conn.transact(items) is None


async def _created(table: Table, run_id: str) -> str:
    hint = table.hints.get(run_id)
    if hint is not None:
        return hint.created_text
    row = await table.get_row(run_id)
    if row is None:
        raise RunNotFound(run_id)
    return row.created_text


async def _leased_update(table: Table, run_id: str, attempt: int, update: Update) -> dict[str, Any]:
    """Apply `update` to the row if `attempt` holds the lease; the row after it."""
    update.equal("attempt", n(attempt))
    update.exists("lease_owner")
    try:
        reply = await table.conn.call(
            "UpdateItem",
            TableName=table.name,
            Key=table.row_key(run_id),
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **update.fields(),
        )
    except ConditionFailed as refused:
        if refused.item is None:
            raise RunNotFound(run_id) from None
        raise LeaseLost(run_id, attempt, int_of(refused.item, "attempt")) from None
    row = parse_row(reply["Attributes"])
    table.hints.put(run_id, row.created_text, row.run.inbox_last)
    return dict(reply["Attributes"])


async def renew(table: Table, run_id: str, attempt: int, ttl: dt.timedelta) -> RenewResult:
    """Extend the lease of the current attempt; see `Store.renew`."""
    check_ttl(ttl)
    created = await _created(table, run_id)
    expires = table.clock() + ttl
    lease = to_text(expires, "lease expiry")
    update = Update()
    update.set("lease_expires_at", s(lease))
    update.set("runnable_at", s(lease))
    update.set("claim_at", s(claim_key(lease, created)))
    row = await _leased_update(table, run_id, attempt, update)
    return RenewResult(expires, int_of(row, "inbox_last"))


async def release(table: Table, run_id: str, attempt: int, runnable_at: dt.datetime | None) -> None:
    """Give up the current attempt's lease; claimable again at `runnable_at` (None: now)."""
    at = NEVER_BEFORE_TEXT if runnable_at is None else to_text(runnable_at, "runnable_at")
    created = await _created(table, run_id)
    update = Update()
    update.set("status", s("queued"))
    update.set("runnable_at", s(at))
    update.set("claim_at", s(claim_key(at, created)))
    update.set("updated_at", s(to_text(table.clock(), "now")))
    update.remove("lease_owner", "lease_expires_at", "waiting", "wake_at")
    await _leased_update(table, run_id, attempt, update)
