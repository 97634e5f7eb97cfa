"""OAuth 2.1 for protected MCP servers: the settings, and the two ports the application owns.

Psych runs no HTTP server, so a person's consent goes through the application: an
`McpAuthorizer` is handed the authorization URL, sends the person there (a link in its UI, a
message), receives the authorization server's redirect on its own route and returns the code.
Tokens are kept per (tenant, server) in an `McpTokenStore`, never in a run's log. The flows
themselves (discovery, registration, PKCE, refresh, scope step-up) are the MCP SDK's.

Nothing here imports the SDK.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from psych_runtime.tools._credentials import check_secret_name

Grant = Literal["authorization_code", "client_credentials"]


@dataclass(frozen=True, slots=True)
class McpTokenKey:
    """What an MCP server's OAuth tokens are kept under: one tenant's grant for one server."""

    tenant: str
    server: str


@runtime_checkable
class McpTokenStore(Protocol):
    """Where OAuth tokens and client registrations of MCP servers are kept.

    A record is a JSON object: ``{"tokens": {...} | None, "client": {...} | None}`` (the
    access and refresh tokens as the authorization server issued them, and the client's
    registration). It holds live credentials: an adapter keeps it encrypted at rest and
    readable only by the workers.
    """

    async def load(self, key: McpTokenKey) -> Mapping[str, Any] | None:
        """The record kept under `key`, or None."""
        ...

    async def save(self, key: McpTokenKey, record: Mapping[str, Any]) -> None:
        """Keep `record` under `key`, replacing what was there."""
        ...


class MemoryTokenStore:
    """Tokens in this process's memory: for tests and single-process apps (a restart forgets
    them, and a person authorizes again)."""

    def __init__(self) -> None:
        self._records: dict[McpTokenKey, dict[str, Any]] = {}
        self._lock = asyncio.Lock()

    async def load(self, key: McpTokenKey) -> Mapping[str, Any] | None:
        async with self._lock:
            record = self._records.get(key)
            return copy.deepcopy(record) if record is not None else None

    async def save(self, key: McpTokenKey, record: Mapping[str, Any]) -> None:
        async with self._lock:
            self._records[key] = copy.deepcopy(dict(record))

    @property
    def keys(self) -> tuple[McpTokenKey, ...]:
        """The keys records are kept under now."""
        return tuple(self._records)

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._records)} records)"


@dataclass(frozen=True, slots=True)
class McpAuthorizationRequest:
    """A person's consent is needed: send them to `url`.

    Attributes:
        tenant: the tenant whose runs need the grant.
        server: the MCP server's name in ``Runtime.mcp_servers``.
        url: the authorization server's page, with the PKCE challenge, state and scope.
        scope: the scope asked for (more than before when a call needed more).
    """

    tenant: str
    server: str
    url: str
    scope: str | None


@dataclass(frozen=True, slots=True)
class McpAuthorizationResponse:
    """What the authorization server sent to the application's redirect URI.

    Attributes:
        code: the ``code`` query parameter.
        state: the ``state`` query parameter (checked against the request's).
        iss: the ``iss`` query parameter, when the server sends one (RFC 9207).
    """

    code: str
    state: str | None
    iss: str | None = None


@runtime_checkable
class McpAuthorizer(Protocol):
    """The application's side of the authorization code flow (its redirect port)."""

    async def authorize(self, request: McpAuthorizationRequest) -> McpAuthorizationResponse:
        """Send a person to ``request.url`` and return what arrives at the redirect URI.

        The worker's call waits on this (up to `McpOAuth.authorize_timeout`); raise to give up.
        """
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class McpOAuth:
    """OAuth 2.1 for an MCP server reached over HTTP (`McpHttp.oauth`).

    The server's protected-resource metadata says which authorization server to use; the
    SDK discovers it, registers the client when no `client_id` is given (authorization code
    only), runs the grant, refreshes tokens before they expire and, when the server answers
    403 ``insufficient_scope``, asks again for the scope it needs on top of what was granted.

    Attributes:
        tokens: where each tenant's tokens are kept.
        grant: ``"client_credentials"`` (a service acting for itself: `client_id` and
            `client_secret` required) or ``"authorization_code"`` (a person consents, through
            `authorizer`; PKCE always).
        client_id: the client's id at the authorization server (``{tenant}`` in it takes the
            run's tenant, for a client per tenant); None to register dynamically.
        client_secret: the name of the secret holding the client's secret, resolved through
            the runtime's `SecretResolver`; ``{tenant}`` in it takes the run's tenant. None
            for a public client.
        scope: the scope to ask for; None for what the server advertises.
        issuer: the authorization server the client credentials belong to; the flow stops
            when the MCP server points anywhere else. Required for client credentials.
        authorizer: the application's redirect port (authorization code).
        redirect_uri: the application's route the authorization server redirects to.
        authorize_timeout: seconds a person has to consent before the attempt gives up (on
            top of the connection's timeout when a session opens; within the call's timeout
            when a call asks for more scope).
        client_name: the name shown to the person when the client registers itself.
    """

    tokens: McpTokenStore
    grant: Grant = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None
    issuer: str | None = None
    authorizer: McpAuthorizer | None = None
    redirect_uri: str | None = None
    authorize_timeout: float = 600.0
    client_name: str = "Psych Runtime"

    def __post_init__(self) -> None:
        if self.grant == "client_credentials":
            missing = [
                name
                for name in ("client_id", "client_secret", "issuer")
                if getattr(self, name) is None
            ]
            if missing:
                raise ValueError(f"McpOAuth(grant='client_credentials') needs {', '.join(missing)}")
        elif self.grant == "authorization_code":
            if self.authorizer is None or self.redirect_uri is None:
                raise ValueError(
                    "McpOAuth(grant='authorization_code') needs authorizer (the application's "
                    "redirect port) and redirect_uri (its callback route)"
                )
        else:
            raise ValueError(
                f"McpOAuth grant must be 'authorization_code' or "
                f"'client_credentials', not {self.grant!r}"
            )
        if self.authorize_timeout <= 0:
            raise ValueError("McpOAuth authorize_timeout must be positive")
        check_secret_name("client_secret", self.client_secret)

    def client_id_for(self, tenant: str) -> str | None:
        """The client's id for runs of `tenant`, or None (registered dynamically)."""
        if self.client_id is None:
            return None
        return self.client_id.replace("{tenant}", tenant)

    def secret_name(self, tenant: str) -> str | None:
        """The name of the client secret for runs of `tenant`, or None."""
        if self.client_secret is None:
            return None
        return self.client_secret.replace("{tenant}", tenant)
