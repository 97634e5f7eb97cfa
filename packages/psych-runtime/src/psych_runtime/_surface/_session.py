"""`session()`: run agents in this process, on any store (memory by default)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from psych_core import (
    AgentSpec,
    BlobStore,
    ModelClient,
    Scope,
    ScopedStore,
    Store,
    WorkflowSpec,
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
from psych_runtime.runtime import (
    Runtime,
    TelemetryFeed,
    dispatch,
    drive,
    load_spec,
    load_state,
    new_worker_id,
    registry_of,
    runtime_of,
)
from psych_runtime.tools import ToolFunction

DEFAULT_SCOPE = Scope(tenant="default")
"""The scope of a session created without one."""


class Session:
    """Runs agents in this process. Create one with `session()`.

    Attributes:
        store: the session's store, scoped to its scope; pass it to `report`, `status`, ...
        runtime: what its runs execute with.
    """

    def __init__(self, runtime: Runtime, store: ScopedStore, own: Store) -> None:
        self.store = store
        self.runtime = runtime
        # The session's own store, which it created or was given: it drives its runs there,
        # as a worker does, and reads them back through `store`, the scoped handle.
        self._own = own
        self._registry = registry_of(runtime)
        self._feed = TelemetryFeed.of(runtime.telemetry, runtime.model)
        self._worker_id = f"session:{new_worker_id()}"

    async def ask(
        self,
        spec: AgentSpec | WorkflowSpec,
        text: str,
        *,
        idempotency_key: str | None = None,
        continues: str | None = None,
    ) -> RunView:
        """Run `spec` on the user's `text` in this process until it ends or waits.

        A `WorkflowSpec` runs the same way: `text` is its input as JSON text, and the view's
        `output` is the workflow's output.

        Each call is one run with its own log. A run that waits (for an approval, a resume)
        comes back with status ``waiting``: send the signal (`approve`, `resume`, ...) with
        `store` and call `drive` to go on. Raises `ToolNotRegistered` before anything is saved
        when the spec names a tool this session has no function for (or a sandbox tool and
        no sandbox that can run it: `SandboxToolUnavailable`), and `PolicyDenied` when the
        session's policy does not let its scope dispatch the agent.

        `continues` names an ended run whose thread this run carries on (`dispatch`).
        """
        missing = self._registry.missing(spec)
        if missing is not None:
            raise missing
        run_id = await dispatch(
            self.store,
            spec,
            text,
            idempotency_key=idempotency_key,
            clock=self.runtime.clock,
            secrets=self.runtime.secrets,
            continues=continues,
        )
        return await self.drive(run_id)

    async def aclose(self) -> None:
        """Close the connections the session's http tools opened (done when it exits)."""
        await self._registry.aclose()

    async def drive(self, run_id: str) -> RunView:
        """Run one of this session's runs in this process until it ends or waits again.

        Use it after a signal woke a waiting run (`approve`, `deny`, `resume`, `cancel`,
        `interrupt`). The attempt runs exactly as a worker's would (`drive` in
        `psych_runtime.runtime`). A run that is not claimable (it waits, or another worker
        holds it) is followed until it ends or waits. Raises `RunNotFound` outside the
        session's tenant, `ToolNotRegistered` when its spec names a tool the session lacks,
        and what made the attempt hand the run back when it could not run it.
        """
        records = await self.store.read(run_id)
        missing = self._registry.missing(await load_spec(self.store, run_id, records))
        if missing is not None:
            raise missing
        leases = self.runtime.leases
        sent = asyncio.get_running_loop().time()
        claim = await self._own.claim(
            self._worker_id, leases.ttl, run_id=run_id, max_attempts=leases.max_attempts
        )
        if claim is not None:
            driven = await drive(
                self._own, claim, self.runtime, self._registry, claimed_at=sent, feed=self._feed
            )
            if driven.state is not None:
                return view_of(driven.state)
            if driven.released and driven.error is not None:
                raise driven.error
        # Another worker holds the run (or took it from this attempt): follow it.
        state = await load_state(self._own, run_id)
        while not state.ended and state.status != "waiting":
            await self.store.wait(run_id, state.last_seq, timeout=1.0)
            state = fold_all(state, await self.store.read(run_id, state.last_seq))
        return view_of(state)


@asynccontextmanager
async def session(
    model: ModelClient | None = None,
    *,
    tools: Iterable[ToolFunction] = (),
    runtime: Runtime | None = None,
    store: Store | None = None,
    scope: Scope | None = None,
    blobs: BlobStore | None = None,
    blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
    **options: Any,
) -> AsyncIterator[Session]:
    """Run agents in this process: ``async with session(model, tools=[...]) as s:``.

    Args:
        model: the model client (`FakeModel` in tests, a real client in production), with
            `tools`; or pass everything as one `runtime` instead.
        tools: the functions the session's agents may call, matched to `CodeTool` by name.
        runtime: what runs execute with (`Runtime`: model, tools, secrets, prices, policy,
            sandbox, egress, leases, ...), in place of `model` and `tools`.
        store: where runs are kept; a new `MemoryStore` when omitted.
        scope: who the session acts for; ``Scope(tenant="default")`` when omitted.
        blobs: where record bodies larger than `blob_threshold` bytes are kept (the store is
            wrapped in an `OffloadingStore`). With the default memory store, a
            `MemoryBlobStore` when omitted; with a store of yours, nothing is offloaded unless
            you pass one (or wrap the store yourself).
        blob_threshold: the largest body, in bytes of JSON, kept in the log itself.
        **options: deprecated: the `Runtime`'s options one by one (``secrets=``,
            ``prices=``, ``policy=``, ...), each with a `DeprecationWarning`.

    The session's `store` carries the runtime's policy (`AllowAll` when it has none) to
    `status`, `report`, `approve`, ..., and its secrets, redacted from the signals it stores.
    """
    chosen = _runtime_of(model, tools, runtime, options)
    own: Store = store if store is not None else MemoryStore()
    if blobs is None and store is None:
        blobs = MemoryBlobStore()
    if blobs is not None:
        own = OffloadingStore(own, blobs, threshold=blob_threshold)
    await own.migrate()
    policy = chosen.policy if chosen.policy is not None else AllowAll()
    scoped = own.scoped(
        scope or DEFAULT_SCOPE,
        policy=policy,
        secrets=chosen.secrets,
        telemetry=chosen.telemetry,
    )
    created = Session(chosen, scoped, own)
    try:
        yield created
    finally:
        await created.aclose()


def _runtime_of(
    model: ModelClient | None,
    tools: Iterable[ToolFunction],
    runtime: Runtime | None,
    options: dict[str, Any],
) -> Runtime:
    tools = tuple(tools)
    if runtime is not None:
        if model is not None or tools:
            raise TypeError(
                "session() takes a model and tools, or a runtime that has them, not both: "
                "session(runtime=Runtime(model=..., tools=[...]))"
            )
        return runtime_of(runtime, options, "session()", stacklevel=5)
    if model is None:
        raise TypeError("session() needs a model: session(model, tools=[...])")
    if options:
        return runtime_of(
            None, {"model": model, "tools": tools, **options}, "session()", stacklevel=5
        )
    return Runtime(model=model, tools=tools)
