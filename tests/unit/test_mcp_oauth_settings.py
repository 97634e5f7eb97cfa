"""OAuth settings of protected MCP servers: what each grant needs, said when it is built; and
the token storage the SDK is given, bound to one tenant's grant on one server."""

from __future__ import annotations

import time

import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from psych_runtime.mcp import (
    McpAuthorizationRequest,
    McpAuthorizationResponse,
    McpHttp,
    McpOAuth,
    McpTokenKey,
    MemoryTokenStore,
)
from psych_runtime.tools._mcp._oauth import EXPIRY_MARGIN, BoundTokenStorage, oauth_auth


class Consents:
    async def authorize(self, request: McpAuthorizationRequest) -> McpAuthorizationResponse:
        return McpAuthorizationResponse(code="c", state=None)


def test_client_credentials_need_a_client_a_secret_and_an_issuer() -> None:
    with pytest.raises(ValueError, match="client_id, client_secret, issuer"):
        McpOAuth(tokens=MemoryTokenStore(), grant="client_credentials")
    settings = McpOAuth(
        tokens=MemoryTokenStore(),
        grant="client_credentials",
        client_id="svc-{tenant}",
        client_secret="SECRET_{tenant}",
        issuer="https://auth.example",
    )
    assert settings.client_id_for("acme") == "svc-acme"
    assert settings.secret_name("acme") == "SECRET_acme"


def test_the_code_flow_needs_the_application_s_redirect_port() -> None:
    with pytest.raises(ValueError, match=r"authorizer .* and redirect_uri"):
        McpOAuth(tokens=MemoryTokenStore())
    with pytest.raises(ValueError, match="redirect_uri"):
        McpOAuth(tokens=MemoryTokenStore(), authorizer=Consents())
    settings = McpOAuth(
        tokens=MemoryTokenStore(), authorizer=Consents(), redirect_uri="https://app/cb"
    )
    assert settings.client_id_for("acme") is None and settings.secret_name("acme") is None


@pytest.mark.parametrize("bad", ["", "{tenant}", "X_{principal}", "X_{tenant"])
def test_a_client_secret_is_a_secret_s_name(bad: str) -> None:
    with pytest.raises(ValueError, match="secret's name"):
        McpOAuth(
            tokens=MemoryTokenStore(),
            grant="client_credentials",
            client_id="svc",
            client_secret=bad,
            issuer="https://auth.example",
        )


def test_oauth_and_an_authorization_header_do_not_mix() -> None:
    oauth = McpOAuth(tokens=MemoryTokenStore(), authorizer=Consents(), redirect_uri="https://a/cb")
    with pytest.raises(ValueError, match="own Authorization header"):
        McpHttp(url="https://mcp.example/mcp", headers={"authorization": "x"}, oauth=oauth)
    assert McpHttp(url="https://mcp.example/mcp", headers={"X-Team": "a"}, oauth=oauth).oauth


async def test_tokens_are_kept_per_tenant_and_server_with_their_expiry() -> None:
    store = MemoryTokenStore()
    alpha = BoundTokenStorage(store, McpTokenKey(tenant="alpha", server="vault"))
    beta = BoundTokenStorage(store, McpTokenKey(tenant="beta", server="vault"))
    before = time.time()
    await alpha.set_tokens(OAuthToken(access_token="at-a", expires_in=60, refresh_token="rt-a"))
    await alpha.set_client_info(OAuthClientInformationFull(client_id="dyn-1", redirect_uris=None))
    assert (await alpha.get_tokens()) == OAuthToken(
        access_token="at-a", expires_in=60, refresh_token="rt-a"
    )
    assert (await alpha.get_client_info()) is not None
    assert await beta.get_tokens() is None and await beta.get_client_info() is None
    expires_at = await alpha.expires_at()
    assert expires_at is not None and before + 60 <= expires_at <= time.time() + 60
    # A copy goes in and out: changing what was loaded changes nothing kept.
    record = await store.load(McpTokenKey(tenant="alpha", server="vault"))
    assert record is not None
    dict(record)["tokens"] = None
    assert (await alpha.get_tokens()) is not None


async def test_a_pre_registered_client_is_never_overwritten() -> None:
    store = MemoryTokenStore()
    fixed = OAuthClientInformationFull(client_id="pre", redirect_uris=None)
    storage = BoundTokenStorage(store, McpTokenKey(tenant="t", server="s"), fixed)
    await storage.set_client_info(OAuthClientInformationFull(client_id="other", redirect_uris=None))
    assert (await storage.get_client_info()) == fixed
    assert store.keys == ()


async def test_a_restarted_session_knows_when_its_kept_token_expires() -> None:
    store = MemoryTokenStore()
    key = McpTokenKey(tenant="acme", server="vault")
    await BoundTokenStorage(store, key).set_tokens(OAuthToken(access_token="at", expires_in=10))
    oauth = McpOAuth(tokens=store, authorizer=Consents(), redirect_uri="https://app/cb")
    provider = await oauth_auth(
        server="vault",
        url="https://mcp.example/mcp",
        oauth=oauth,
        tenant="acme",
        client_secret=None,
    )
    expiry = provider.context.token_expiry_time
    # Kept tokens count as expired a margin early, so a new session refreshes them first.
    assert expiry is not None and expiry <= time.time() + 10 - EXPIRY_MARGIN + 1
