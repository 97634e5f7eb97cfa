"""The MCP SDK's OAuth providers, wired to Psych's ports: one per pooled session.

The SDK does the protocol (metadata discovery, dynamic registration, PKCE, the token and
refresh grants, scope step-up on 403 ``insufficient_scope``) as an httpx2 ``Auth`` on the
session's egress-guarded client, so the flow's own requests obey the egress policy too. What
Psych adds: tokens kept per (tenant, server) in the application's `McpTokenStore` with the
moment they expire (a restarted worker refreshes an expired token instead of asking a person
again), and the consent step handed to the application's `McpAuthorizer`, with a deadline.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from psych_runtime.tools._mcp._authorization import (
    McpAuthorizationRequest,
    McpOAuth,
    McpTokenKey,
    McpTokenStore,
)

EXPIRES_AT = "expires_at"
"""The record's field for when the access token expires (seconds since the epoch)."""

EXPIRY_MARGIN = 30.0
"""Seconds before a kept token's expiry at which a newly opened session refreshes it first."""


class BoundTokenStorage:
    """The SDK's ``TokenStorage`` for one tenant's grant on one server."""

    def __init__(
        self,
        store: McpTokenStore,
        key: McpTokenKey,
        fixed_client: OAuthClientInformationFull | None = None,
    ) -> None:
        self._store = store
        self._key = key
        self._fixed_client = fixed_client

    async def get_tokens(self) -> OAuthToken | None:
        raw = (await self._record()).get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self._record()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        record[EXPIRES_AT] = (
            time.time() + tokens.expires_in if tokens.expires_in is not None else None
        )
        await self._store.save(self._key, record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._fixed_client is not None:
            return self._fixed_client
        raw = (await self._record()).get("client")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self._fixed_client is not None:
            return
        record = await self._record()
        record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        await self._store.save(self._key, record)

    async def expires_at(self) -> float | None:
        """When the kept access token expires, if that is known."""
        value = (await self._record()).get(EXPIRES_AT)
        return float(value) if isinstance(value, int | float) else None

    async def _record(self) -> dict[str, Any]:
        return dict(await self._store.load(self._key) or {})


async def oauth_auth(
    *,
    server: str,
    url: str,
    oauth: McpOAuth,
    tenant: str,
    client_secret: str | None,
) -> OAuthClientProvider:
    """The SDK's OAuth provider (an httpx2 ``Auth``) for `tenant`'s session with `server`."""
    key = McpTokenKey(tenant=tenant, server=server)
    client_id = oauth.client_id_for(tenant)
    provider: OAuthClientProvider
    if oauth.grant == "client_credentials":
        assert client_id is not None
        assert client_secret is not None
        storage = BoundTokenStorage(oauth.tokens, key)
        provider = ClientCredentialsOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=client_id,
            client_secret=client_secret,
            scope=oauth.scope,
            issuer=oauth.issuer,
        )
    else:
        assert oauth.redirect_uri is not None
        grant_types: list[Any] = ["authorization_code", "refresh_token"]
        fixed = None
        if client_id is not None:
            fixed = OAuthClientInformationFull(
                client_id=client_id,
                client_secret=client_secret,
                redirect_uris=[AnyUrl(oauth.redirect_uri)],
                grant_types=grant_types,
                token_endpoint_auth_method="client_secret_post" if client_secret else "none",
                scope=oauth.scope,
            )
        storage = BoundTokenStorage(oauth.tokens, key, fixed)
        consent = _Consent(server, tenant, oauth)
        provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name=oauth.client_name,
                redirect_uris=[AnyUrl(oauth.redirect_uri)],
                grant_types=grant_types,
                response_types=["code"],
                token_endpoint_auth_method="none",
                scope=oauth.scope,
            ),
            storage=storage,
            redirect_handler=consent.redirect,
            callback_handler=consent.callback,
        )
    # The SDK counts a stored token as valid until it learns otherwise; with the kept expiry
    # an expired one is refreshed first, without a refused request (or a person) in between.
    expires_at = await storage.expires_at()
    if expires_at is not None:
        provider.context.token_expiry_time = expires_at - EXPIRY_MARGIN
    return provider


class _Consent:
    """The authorization code flow's person step, through the application's authorizer."""

    def __init__(self, server: str, tenant: str, oauth: McpOAuth) -> None:
        self._server = server
        self._tenant = tenant
        self._oauth = oauth
        self._url: str | None = None

    async def redirect(self, url: str) -> None:
        self._url = url

    async def callback(self) -> AuthorizationCodeResult:
        authorizer, url = self._oauth.authorizer, self._url
        assert authorizer is not None
        assert url is not None
        scope = parse_qs(urlparse(url).query).get("scope", [None])[0]
        request = McpAuthorizationRequest(
            tenant=self._tenant, server=self._server, url=url, scope=scope
        )
        with anyio.move_on_after(self._oauth.authorize_timeout) as deadline:
            response = await authorizer.authorize(request)
        if deadline.cancelled_caught:
            raise OAuthFlowError(
                f"no one authorized tenant {self._tenant!r} for MCP server {self._server!r} "
                f"within {self._oauth.authorize_timeout:g} s"
            )
        return AuthorizationCodeResult(code=response.code, state=response.state, iss=response.iss)
