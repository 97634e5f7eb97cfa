"""`dispatch`: admit a run for a scope and return its id at once."""

from __future__ import annotations

from psych_core import AgentSpec, ScopedStore, SecretResolver
from psych_runtime.model.egress import Redactor
from psych_runtime.runtime._admission import admit
from psych_runtime.runtime._clock import Clock, SystemClock
from psych_runtime.runtime._ids import new_run_id
from psych_runtime.runtime._scoped import authorize


async def dispatch(
    store: ScopedStore,
    spec: AgentSpec,
    input: str,
    *,
    idempotency_key: str | None = None,
    clock: Clock | None = None,
    secrets: SecretResolver | None = None,
) -> str:
    """Admit a run of `spec` on `input` and return its id at once; a worker will run it.

    Stores the spec under its version and writes `RunAdmitted` as seq 0. With an
    `idempotency_key` already used in the store's tenant, admits nothing and returns the
    existing run's id; the same key with another spec or input raises `IdempotencyConflict`.
    With a policy on `store` (``store.scoped(scope, policy=...)``), it must authorize
    ``dispatch`` of the agent (`spec.name`) first: `PolicyDenied` otherwise, and nothing is
    saved. With `secrets` (the resolver the workers are given), every value it knows is
    redacted from the recorded input, as from every record a worker writes.
    """
    authorize(store, "dispatch", spec.name, function="dispatch")
    now = (clock or SystemClock()).now()
    admitted_id, _created = await admit(
        store,
        spec,
        input,
        run_id=new_run_id(now),
        scope=store.scope,
        at=now,
        redactor=Redactor(secrets),
        idempotency_key=idempotency_key,
    )
    return admitted_id
