"""`Runtime`: every option an attempt runs with, in one frozen value.

`Worker`, `session()` and the attempt take it; nothing unpacks it into parameter lists again,
so an option added here reaches every attempt (and every tool, through `ToolContext.runtime`)
with no other edit. An app may subclass it (a frozen dataclass) to carry options of its own to
its tools.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from psych_core import (
    LiveChannel,
    ModelClient,
    Policy,
    Sandbox,
    SecretResolver,
    Telemetry,
    UserMemory,
)
from psych_runtime.model import PriceTable
from psych_runtime.model.egress import EgressPolicy
from psych_runtime.runtime._clock import Clock, SystemClock
from psych_runtime.runtime._decide import ApprovalCheck
from psych_runtime.tools import A2AConnection, McpConnection, ToolFunction, ToolRegistry


@dataclass(frozen=True, slots=True)
class Leases:
    """How an attempt holds its run.

    Attributes:
        ttl: how long a claim holds a run without a renewal.
        heartbeat: how often the lease is renewed; a third of `ttl` when None.
        max_attempts: claims of one run without finishing (since it last suspended) before it
            fails with ``attempts_exhausted``.
        release_backoff: how long a run a worker cannot serve (a tool it lacks, a log from a
            newer psych-core) waits before any worker may claim it again.
    """

    ttl: dt.timedelta = dt.timedelta(seconds=30)
    heartbeat: dt.timedelta | None = None
    max_attempts: int = 10
    release_backoff: dt.timedelta = dt.timedelta(seconds=5)

    def __post_init__(self) -> None:
        if self.ttl <= dt.timedelta(0):
            raise ValueError(f"Leases.ttl must be positive, got {self.ttl}")
        if self.heartbeat is not None and not dt.timedelta(0) < self.heartbeat < self.ttl:
            raise ValueError(
                f"Leases.heartbeat must be positive and shorter than ttl ({self.ttl}), got "
                f"{self.heartbeat}: a lease renewed less often than it lasts expires"
            )
        if self.max_attempts < 1:
            raise ValueError(f"Leases.max_attempts must be at least 1, got {self.max_attempts}")

    @property
    def every(self) -> float:
        """Seconds between renewals."""
        beat = self.heartbeat if self.heartbeat is not None else self.ttl / 3
        return beat.total_seconds()


@dataclass(frozen=True, slots=True, kw_only=True)
class Runtime:
    """What runs execute with: the app's model, tools and the rest, as one value.

    ``Worker(store, Runtime(model=..., tools=[...]))`` and ``session(runtime=Runtime(...))``
    take it (``session(model, tools=[...])`` builds one). Frozen: derive another with
    `replace` (``runtime.replace(prices=...)``).

    Attributes:
        model: the model client.
        tools: the functions runs may call, matched to the specs' tools by name (kept as a
            tuple).
        sandbox: where sandbox tools run. Without one, a run whose spec has a sandbox tool is
            not served (a worker releases it for another, a session refuses it).
        secrets: the secrets whose values must never be recorded: each value it knows is
            redacted, raw or encoded, from every record before it is written; http tools' header
            secrets are resolved through it.
        prices: the app's own prices, for model calls the provider did not price.
        approval_rules: named approval rules, for tools declared with
            ``requires_approval="name"``: each takes the call's arguments and returns whether
            the call needs approval. A name missing here always asks for approval.
        policy: what each scope may do, and which tools its runs are offered before every
            model call (`Policy.narrow`); a call to a tool it took away is refused and recorded.
        egress: which addresses http tools (and MCP servers over HTTP) may reach; each http
            tool reaches only its URL's host. Public addresses only when None.
        mcp_servers: how to reach the MCP servers specs name (`McpServer`), by name:
            `McpStdio` (a command) or `McpHttp` (a URL), each with the secret it uses.
        a2a_peers: how to reach the A2A peers specs name (`A2APeer`), by name: `A2AHttp`
            (the peer's URL), with the secret it uses.
        clock: where times in records come from.
        leases: how attempts hold their runs (`Leases`).
        cancel_grace: seconds in-flight calls get to finish after the run is cancelled; calls
            still running then are settled ``unknown``.
        live: where the model's words go while it writes them (a `LiveChannel`), for
            `stream_text`; the model is asked to stream only when this is set and it can.
        memory: where facts about end users are kept, for specs with ``memory=True``
            (`UserMemory`: `LocalUserMemory`, ``SQLiteUserMemory``, ``PostgresUserMemory``).
        telemetry: where the runs' traces and measures go (`Telemetry`:
            ``psych_telemetry_otel.OTelTelemetry``); nothing is reported when None. An adapter
            that fails is counted and logged, and never fails a run.
    """

    model: ModelClient
    tools: Sequence[ToolFunction] = ()
    sandbox: Sandbox | None = None
    secrets: SecretResolver | None = None
    prices: PriceTable | None = None
    approval_rules: Mapping[str, ApprovalCheck] = field(default_factory=dict)
    policy: Policy | None = None
    egress: EgressPolicy | None = None
    mcp_servers: Mapping[str, McpConnection] = field(default_factory=dict)
    a2a_peers: Mapping[str, A2AConnection] = field(default_factory=dict)
    clock: Clock = field(default_factory=SystemClock)
    leases: Leases = field(default_factory=Leases)
    cancel_grace: float = 10.0
    live: LiveChannel | None = None
    memory: UserMemory | None = None
    telemetry: Telemetry | None = None

    def __post_init__(self) -> None:
        # Frozen all the way down: a list or dict passed in cannot change under the value.
        tools: Iterable[ToolFunction] = self.tools
        object.__setattr__(self, "tools", tuple(tools))
        object.__setattr__(self, "approval_rules", MappingProxyType(dict(self.approval_rules)))
        object.__setattr__(self, "mcp_servers", MappingProxyType(dict(self.mcp_servers)))
        object.__setattr__(self, "a2a_peers", MappingProxyType(dict(self.a2a_peers)))
        if self.cancel_grace < 0:
            raise ValueError(f"Runtime.cancel_grace must not be negative, got {self.cancel_grace}")

    def replace(self, **changes: Any) -> Runtime:
        """A copy with `changes` (field names and their new values)."""
        return replace(self, **changes)


def registry_of(runtime: Runtime) -> ToolRegistry:
    """The tools of `runtime`, ready to run: one registry per worker or session, which owns the
    connections its http tools open (closed by `ToolRegistry.aclose`)."""
    return ToolRegistry(
        runtime.tools,
        sandbox=runtime.sandbox,
        egress=runtime.egress,
        secrets=runtime.secrets,
        mcp_servers=runtime.mcp_servers,
        a2a_peers=runtime.a2a_peers,
        memory=runtime.memory,
    )
