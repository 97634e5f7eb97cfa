"""Connections to A2A peers, one per (tenant, peer, credential), through the official SDK.

A connection is never looked up by URL alone: its key holds the run's tenant and the
credential it was made with (its secret's name and a digest of the value), so one tenant's
credential, and whatever the peer tied to it (its tasks, its extended card), never serves
another's run. Each connection holds an httpx client on the egress seam's guarded transport
(with the credential's headers), the peer's Agent Card, read again once its time to live has
passed, and the SDK's client made from that card. Connections stood idle long are closed;
all close with the worker (`A2APool.aclose`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import AgentCard

from psych_core import Scope, SecretResolver
from psych_runtime.model.egress._httpx import guarded_httpx_client
from psych_runtime.model.egress._httpx import never_sent as never_sent  # for the calls
from psych_runtime.tools._a2a._config import A2AConnection, credential_name
from psych_runtime.tools._credentials import digest, filled, resolved
from psych_runtime.tools._http import EgressPolicy

IDLE_CLOSE = 300.0
"""Seconds a connection may stand idle, no call in flight, before the pool closes it."""

CLEANUP_TIMEOUT = 5.0
"""Seconds a remote cancel sent while a call is cut off may take."""


@dataclass(frozen=True, slots=True)
class PeerKey:
    """What a connection is pooled by: never a URL alone."""

    tenant: str
    peer: str
    credential: str | None
    digest: str | None


class PeerConnection:
    """One peer, for one tenant and credential: its card and the SDK's client."""

    def __init__(
        self,
        peer: str,
        connection: A2AConnection,
        credential: str | None,
        egress: EgressPolicy | None,
    ) -> None:
        self.peer = peer
        self.connection = connection
        self.http = guarded_httpx_client(
            egress, headers=filled(connection.headers, credential), timeout=connection.timeout
        )
        self._card: AgentCard | None = None
        self._client: Client | None = None
        self._read_at = 0.0
        self._lock = asyncio.Lock()
        self._cleanups: set[asyncio.Task[None]] = set()
        self._last_used = time.monotonic()
        self.in_flight = 0
        self.card_reads = 0
        """How many times the card was read from the peer (the cache's misses)."""

    async def card(self) -> AgentCard:
        """The peer's Agent Card: the one read last, or read again once it is older than the
        connection's `card_ttl`. Raises what the SDK or the egress seam raises when the card
        cannot be had."""
        self._last_used = time.monotonic()
        async with self._lock:
            now = time.monotonic()
            if self._card is not None and now - self._read_at < self.connection.card_ttl:
                return self._card
            resolver = A2ACardResolver(
                self.http, self.connection.url, agent_card_path=self.connection.card_path
            )
            card = await resolver.get_agent_card()
            streams = self.connection.streaming and card.capabilities.streaming
            config = ClientConfig(streaming=streams, polling=not streams, httpx_client=self.http)
            # The SDK's client shares `http` (it never closes a client it was given), so a
            # client made from an older card needs no closing.
            self._client = ClientFactory(config).create(card)
            self._card, self._read_at = card, time.monotonic()
            self.card_reads += 1
            return card

    @property
    def streams(self) -> bool:
        """Whether calls follow their task by its event stream: the connection asks for it
        and the card read last says the peer can. Otherwise a message is answered at once
        with its task, which is then polled (so a call cut off always knows what to cancel)."""
        card = self._card
        return self.connection.streaming and card is not None and card.capabilities.streaming

    @property
    def client(self) -> Client:
        """The SDK's client, made from the card read last."""
        if self._client is None:
            raise RuntimeError(f"A2A peer {self.peer!r}: the card was never read")
        self._last_used = time.monotonic()
        return self._client

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (a remote cancel) to its end even when the call that began it is
        cancelled again; `aclose` waits a little for what is still running."""
        task = asyncio.create_task(work)
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    def idle_for(self, now: float) -> float:
        """Seconds since the connection was last used; 0 while a call is in flight."""
        return 0.0 if self.in_flight or self._cleanups else now - self._last_used

    async def aclose(self) -> None:
        """Let remote cancels under way finish (briefly), then close the HTTP client."""
        if self._cleanups:
            await asyncio.wait(set(self._cleanups), timeout=CLEANUP_TIMEOUT)
        for task in set(self._cleanups):
            task.cancel()
        await self.http.aclose()


class A2APool:
    """The peer connections of one worker or session, by (tenant, peer, credential).

    Args:
        connections: how to reach each peer, by name.
        secrets: where credentials come from.
        egress: the rules every request obeys.
    """

    def __init__(
        self,
        connections: Mapping[str, A2AConnection],
        secrets: SecretResolver | None,
        egress: EgressPolicy | None,
    ) -> None:
        self._connections = dict(connections)
        self._secrets = secrets
        self._egress = egress
        self._open: dict[PeerKey, PeerConnection] = {}

    def connection(self, peer: str) -> A2AConnection:
        """How `peer` is reached."""
        return self._connections[peer]

    async def peer(self, peer: str, scope: Scope) -> PeerConnection:
        """The connection to `peer` for `scope`'s tenant and credential; made when there is
        none. `SecretNotFound` when the credential has no value."""
        await self._close_idle()
        connection = self._connections[peer]
        name = credential_name(connection, scope)
        value = await resolved(self._secrets, name, f"A2A peer {peer!r}")
        key = PeerKey(scope.tenant, peer, name, digest(value))
        current = self._open.get(key)
        if current is None:
            current = self._open[key] = PeerConnection(peer, connection, value, self._egress)
        return current

    @property
    def open_keys(self) -> tuple[PeerKey, ...]:
        """The keys of the connections open now."""
        return tuple(self._open)

    async def aclose(self) -> None:
        """Close every connection."""
        held, self._open = list(self._open.values()), {}
        for connection in held:
            with contextlib.suppress(Exception):
                await connection.aclose()

    async def _close_idle(self) -> None:
        now = time.monotonic()
        idle = [key for key, held in self._open.items() if held.idle_for(now) > IDLE_CLOSE]
        for key in idle:
            held = self._open.pop(key)
            with contextlib.suppress(Exception):
                await held.aclose()
