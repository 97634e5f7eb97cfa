"""Admission: validate, save, return the run id at once."""

from __future__ import annotations

from psych_core import (
    AgentSpec,
    NewRun,
    Record,
    RunAdmitted,
    ScopedStore,
    SecretResolver,
    version_of,
)
from psych_runtime.model.egress import Redactor
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
    version = spec.version
    await store.store.put_spec(version, spec.canonical_json())
    run_id = new_run_id(now)
    first = Record(
        run_id=run_id,
        seq=0,
        attempt=0,
        at=now,
        body=Redactor(secrets).body(
            RunAdmitted(agent=spec.name, spec_version=version, input=input, scope=store.scope)
        ),
    )
    # The hash is of the input as sent: the same request with another secret in it is another
    # request, and a resolver that learns a value later must not change the hash.
    new = NewRun(
        run_id=run_id,
        tenant=store.tenant,
        agent=spec.name,
        spec_version=version,
        idempotency_key=idempotency_key,
        request_hash=version_of({"spec": version, "input": input}) if idempotency_key else None,
    )
    admitted_id, _created = await store.store.create_run(new, first)
    return admitted_id
