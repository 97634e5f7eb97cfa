"""`session()`: run agents in this process, on any store (memory by default)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager

from psych_core import (
    AgentSpec,
    BlobStore,
    ModelClient,
    Policy,
    Sandbox,
    Scope,
    ScopedStore,
    SecretResolver,
    Store,
    fold_all,
)
from psych_runtime._surface._view import RunView, view_of
from psych_runtime.adapters import (
    DEFAULT_BLOB_THRESHOLD,
    AllowAll,
    MemoryBlobStore,
    MemoryStore,
    OffloadingStore,
)
from psych_runtime.model import PriceTable
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.runtime import (
    ApprovalCheck,
    Clock,
    Services,
    SystemClock,
    dispatch,
    execute_claim,
    load_state,
    new_worker_id,
)
from psych_runtime.tools import ToolFunction, ToolRegistry

DEFAULT_SCOPE = Scope(tenant="default")
"""The scope of a session created without one."""

LEASE_TTL = dt.timedelta(seconds=30)


class Session:
    """Runs agents in this process. Create one with `session()`.

    Attributes:
        store: the session's store, scoped to its scope; pass it to `report`, `status`, ...
    """

    def __init__(
        self,
        *,
        model: ModelClient,
        tools: Iterable[ToolFunction],
        store: ScopedStore,
        clock: Clock,
        secrets: SecretResolver | None = None,
        prices: PriceTable | None = None,
        approval_rules: Mapping[str, ApprovalCheck] | None = None,
        sandbox: Sandbox | None = None,
        egress: EgressPolicy | None = None,
        policy: Policy | None = None,
    ) -> None:
        self.store = store
        self._tools = ToolRegistry(tools, sandbox=sandbox, egress=egress, secrets=secrets)
        self._clock = clock
        self._services = Services(
            model=model,
            tools=self._tools,
            clock=clock,
            ttl=LEASE_TTL,
            secrets=secrets,
            prices=prices,
            approval_rules=dict(approval_rules or {}),
            policy=policy,
        )
        self._worker_id = f"session:{new_worker_id()}"

    async def ask(
        self, spec: AgentSpec, text: str, *, idempotency_key: str | None = None
    ) -> RunView:
        """Run `spec` on the user's `text` in this process until it ends or waits.

        Each call is one run with its own log. A run that waits (for an approval, a resume)
        comes back with status ``waiting``: send the signal (`approve`, `resume`, ...) with
        `store` and call `drive` to go on. Raises `ToolNotRegistered` before anything is saved
        when the spec names a tool this session has no function for (or a sandbox tool and
        no sandbox that can run it: `SandboxToolUnavailable`), and `PolicyDenied` when the
        session's policy does not let its scope dispatch the agent.
        """
        missing = self._tools.missing(spec)
        if missing is not None:
            raise missing
        run_id = await dispatch(
            self.store,
            spec,
            text,
            idempotency_key=idempotency_key,
            clock=self._clock,
            secrets=self._services.secrets,
        )
        return await self.drive(run_id)

    async def aclose(self) -> None:
        """Close the connections the session's http tools opened (done when it exits)."""
        await self._tools.aclose()

    async def drive(self, run_id: str) -> RunView:
        """Run one of this session's runs in this process until it ends or waits again.

        Use it after a signal woke a waiting run (`approve`, `deny`, `resume`, `cancel`,
        `interrupt`). A run that is not claimable (it waits, or another worker holds it) is
        followed until it ends or waits. `RunNotFound` outside the session's tenant.
        """
        await self.store.run(run_id)
        inner: Store = self.store.store
        sent = asyncio.get_running_loop().time()
        claim = await inner.claim(self._worker_id, LEASE_TTL, run_id=run_id)
        if claim is not None:
            state = await execute_claim(inner, claim, self._services, claimed_at=sent)
            return view_of(state)
        state = await load_state(inner, run_id)
        while not state.ended and state.status != "waiting":
            await inner.wait(run_id, state.last_seq, timeout=1.0)
            state = fold_all(state, await inner.read(run_id, state.last_seq))
        return view_of(state)


@asynccontextmanager
async def session(
    model: ModelClient,
    *,
    tools: Iterable[ToolFunction] = (),
    store: Store | None = None,
    scope: Scope | None = None,
    clock: Clock | None = None,
    secrets: SecretResolver | None = None,
    prices: PriceTable | None = None,
    approval_rules: Mapping[str, ApprovalCheck] | None = None,
    sandbox: Sandbox | None = None,
    egress: EgressPolicy | None = None,
    policy: Policy | None = None,
    blobs: BlobStore | None = None,
    blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
) -> AsyncIterator[Session]:
    """Run agents in this process: ``async with session(model, tools=[...]) as s:``.

    Args:
        model: the model client (`FakeModel` in tests, a real client in production).
        tools: the functions the session's agents may call, matched to `CodeTool` by name.
        store: where runs are kept; a new `MemoryStore` when omitted.
        scope: who the session acts for; ``Scope(tenant="default")`` when omitted.
        clock: where times come from; the system clock when omitted.
        secrets: the secrets whose values must never be recorded: each value it knows, raw
            or in a common encoding, is redacted from every record (the input, the model's
            replies, tool arguments and results, signals, errors) before it enters the log.
        prices: the app's own prices; a model call the provider did not price itself is
            priced from them (source ``override``) when they know the model that served.
        approval_rules: named approval rules for tools declared with
            ``requires_approval="name"``; see `Worker`.
        sandbox: where sandbox tools run (`SubprocessSandbox`, `NamespaceSandbox`, ...).
        egress: which addresses http tools may reach (each tool only its URL's host);
            public addresses only when omitted.
        policy: what the session's scope may do and which tools its runs are offered;
            `AllowAll` when omitted. `store` carries it to `status`, `report`, `approve`, ...
        blobs: where record bodies larger than `blob_threshold` bytes are kept (the store is
            wrapped in an `OffloadingStore`). With the default memory store, a
            `MemoryBlobStore` when omitted; with a store of yours, nothing is offloaded unless
            you pass one (or wrap the store yourself).
        blob_threshold: the largest body, in bytes of JSON, kept in the log itself.
    """
    inner: Store = store if store is not None else MemoryStore()
    if blobs is None and store is None:
        blobs = MemoryBlobStore()
    if blobs is not None:
        inner = OffloadingStore(inner, blobs, threshold=blob_threshold)
    await inner.migrate()
    chosen = policy if policy is not None else AllowAll()
    created = Session(
        model=model,
        tools=tools,
        store=inner.scoped(scope or DEFAULT_SCOPE, policy=chosen),
        clock=clock or SystemClock(),
        secrets=secrets,
        prices=prices,
        approval_rules=approval_rules,
        sandbox=sandbox,
        egress=egress,
        policy=chosen,
    )
    try:
        yield created
    finally:
        await created.aclose()
