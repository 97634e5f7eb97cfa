"""Executing a claimed run: read and fold its log, then drive one attempt under its lease."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from psych_core import (
    CORRUPT_LOG,
    Batch,
    Claim,
    CorruptLog,
    InboxPending,
    ModelClient,
    Policy,
    Record,
    RunFailed,
    RunIndex,
    RunState,
    SecretResolver,
    Store,
    fold_readable,
)
from psych_runtime.model import PriceTable
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._attempt import Attempt
from psych_runtime.runtime._clock import Clock
from psych_runtime.runtime._decide import ApprovalCheck
from psych_runtime.runtime._execute_state import load_state
from psych_runtime.runtime._lease import Lease, with_lease
from psych_runtime.tools import ToolRegistry


@dataclass(frozen=True, slots=True)
class Services:
    """What an attempt runs with: the app's model, tools, secrets, prices and rules.

    Attributes:
        ttl: the lease's length; renewed every third, and the longest an append is re-sent.
        approval_rules: named approval rules (`CodeTool(requires_approval="name")`).
        cancel_grace: seconds in-flight calls get to finish once the run is cancelled.
        policy: narrows the tools each run is offered, for the run's scope, every turn.
    """

    model: ModelClient
    tools: ToolRegistry
    clock: Clock
    ttl: dt.timedelta
    secrets: SecretResolver | None = None
    prices: PriceTable | None = None
    approval_rules: Mapping[str, ApprovalCheck] = field(default_factory=dict)
    cancel_grace: float = 10.0
    policy: Policy | None = None


async def execute_claim(
    store: Store,
    claim: Claim,
    services: Services,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    claimed_at: float | None = None,
) -> RunState:
    """Run the claimed attempt until the run ends, suspends or `should_stop`; return its state.

    `claimed_at` is the event loop's time when the claim was sent: the lease counts from it.
    Raises `ToolNotRegistered` before doing anything when the run's spec names a tool this
    worker lacks (a rolling deploy), or a sandbox tool its sandbox cannot run: the caller
    releases the run for another worker. A corrupt log fails the run at once
    (`fail_corrupt`); a log from a newer psych-core raises `NewerLog` for the caller to
    release.
    """
    try:
        state = await load_state(store, claim.run_id)
    except CorruptLog as corrupt:
        return await fail_corrupt(store, claim, corrupt, services.clock, services.secrets)
    assert state.admitted is not None
    assert state.spec is not None
    missing = services.tools.missing(state.spec)
    if missing is not None and not state.ended:
        raise missing
    lease = Lease(store, claim.run_id, claim.attempt, services.ttl, granted_at=claimed_at)
    attempt = Attempt(
        store=store,
        lease=lease,
        state=state,
        scope=state.admitted.scope,
        model=services.model,
        tools=services.tools,
        clock=services.clock,
        should_stop=should_stop,
        resend_for=services.ttl.total_seconds() / 2,
        secrets=services.secrets,
        prices=services.prices,
        approval_rules=services.approval_rules,
        cancel_grace=services.cancel_grace,
        policy=services.policy,
    )
    lease.on_renew = attempt.heard
    return await with_lease(lease, attempt.run())


async def fail_corrupt(
    store: Store,
    claim: Claim,
    corrupt: CorruptLog,
    clock: Clock,
    secrets: SecretResolver | None = None,
) -> RunState:
    """End a run whose log is corrupt: one `RunFailed` after its last record, naming the run
    and the seq that does not fit. Nothing is repaired and no record is skipped or rewritten:
    the log stays as it was found, for whoever investigates, and the run stops using claims.

    Returns the state folded up to the corruption, marked failed.
    """
    records = await store.read(claim.run_id)
    readable, _ = fold_readable(RunState.empty(claim.run_id), records)
    failed = Redactor(secrets).body(RunFailed(reason=CORRUPT_LOG, error=str(corrupt)))
    inbox_seen = readable.inbox_seen
    while True:
        record = Record(
            run_id=claim.run_id,
            seq=records[-1].seq + 1,
            attempt=claim.attempt,
            at=clock.now(),
            body=failed,
        )
        batch = Batch(
            records=(record,),
            batch_id=f"{claim.attempt}.{record.seq}",
            index=RunIndex(status="failed"),
            inbox_seen=inbox_seen,
        )
        try:
            await store.append(claim.run_id, claim.attempt, batch)
            break
        except InboxPending as pending:
            # Signals cannot be folded into a log that does not fold; the run ends anyway.
            inbox_seen = pending.inbox_last
    return replace(readable, status="failed", failure_reason=CORRUPT_LOG, error=failed.error)
