"""Executing a claimed run: read and fold its log, then drive one attempt under its lease."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from psych_core import (
    Claim,
    ModelClient,
    Policy,
    RunState,
    SecretResolver,
    Store,
)
from psych_runtime.model import PriceTable
from psych_runtime.runtime._attempt import Attempt
from psych_runtime.runtime._clock import Clock
from psych_runtime.runtime._decide import ApprovalCheck
from psych_runtime.runtime._execute_state import load_state
from psych_runtime.runtime._lease import with_lease
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
) -> RunState:
    """Run the claimed attempt until the run ends, suspends or `should_stop`; return its state.

    Raises `ToolNotRegistered` before doing anything when the run's spec names a tool this
    worker lacks (a rolling deploy), or a sandbox tool its sandbox cannot run: the caller
    releases the run for another worker.
    """
    state = await load_state(store, claim.run_id)
    assert state.admitted is not None
    assert state.spec is not None
    missing = services.tools.missing(state.spec)
    if missing is not None and not state.ended:
        raise missing
    attempt = Attempt(
        store=store,
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
    return await with_lease(
        store, claim.run_id, claim.attempt, services.ttl, attempt.run(), on_renew=attempt.heard
    )
