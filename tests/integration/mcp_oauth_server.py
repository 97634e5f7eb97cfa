"""A protected MCP server and its OAuth authorization server, built with the SDK's server-side
auth support, for the MCP OAuth tests.

``python -m tests.integration.mcp_oauth_server PORT`` serves on loopback: the MCP endpoint at
``/mcp`` (a resource server requiring scope ``mcp``), its protected-resource metadata, and an
authorization server at the root (metadata, dynamic registration, ``/authorize`` with PKCE,
``/token`` for the authorization code and refresh grants). The SDK's token endpoint has no
client credentials grant, so this server adds one in front of it for the clients it was
started with. Consent is automatic: ``/authorize`` redirects straight back with a code, so a
test plays the person by following that one redirect.

Environment: ``DEMO_CLIENTS`` (JSON ``{client_id: secret}``: confidential clients allowed the
client credentials grant), ``DEMO_TOKEN_TTL`` (seconds an access token lives; 3600),
``DEMO_LEDGER`` (a file each grant and call appends a line to).

Tools: ``whoami`` (read-only: the client id and scopes of the token this call came with; never
the token), ``charge`` (needs scope ``write`` on top: without it the server answers 403
``insufficient_scope``, the way a server asks for a step-up).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sys
import time
from typing import Any
from urllib.parse import parse_qs, unquote

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.types import ToolAnnotations
from pydantic import AnyHttpUrl
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPES = ["mcp", "write"]
STEP_UP = {"charge": "write"}


def _ledger(*words: object) -> None:
    path = os.environ.get("DEMO_LEDGER")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(" ".join(str(w) for w in words) + "\n")


class DemoProvider:
    """An in-memory authorization server: clients, codes, access and refresh tokens."""

    def __init__(self, confidential: dict[str, str], ttl: int) -> None:
        self.ttl = ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.confidential = confidential

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        # This server's policy: a registered client may ask for any of its scopes later (a
        # step-up), whatever it asked for when it registered.
        client_info.scope = " ".join(SCOPES)
        self.clients[client_info.client_id] = client_info
        _ledger("register", client_info.client_id)

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24),
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=str(client.client_id),
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        _ledger("authorize", client.client_id, ",".join(sorted(code.scopes)))
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        _ledger("grant code", client.client_id, ",".join(sorted(authorization_code.scopes)))
        return self.issue(str(client.client_id), authorization_code.scopes, refreshable=True)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated
        granted = scopes or refresh_token.scopes
        _ledger("grant refresh", client.client_id, ",".join(sorted(granted)))
        return self.issue(str(client.client_id), granted, refreshable=True)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "identity assertions are not accepted here")

    def issue(self, client_id: str, scopes: list[str], *, refreshable: bool) -> OAuthToken:
        access = AccessToken(
            token=f"at-{secrets.token_urlsafe(24)}",
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.ttl,
        )
        self.access[access.token] = access
        refresh = None
        if refreshable:
            refresh = f"rt-{secrets.token_urlsafe(24)}"
            self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access.token,
            token_type="Bearer",
            expires_in=self.ttl,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, rest: Receive) -> Receive:
    """The request's body again, then whatever comes next (a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await rest()

    return receive


async def _respond(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class Gate:
    """In front of the SDK's app: the client credentials grant, and scope step-up per tool."""

    def __init__(self, app: ASGIApp, provider: DemoProvider, base: str) -> None:
        self.app = app
        self.provider = provider
        self.base = base

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await _body(receive)
        if scope["path"] == "/token" and await self._client_credentials(scope, body, send):
            return
        if scope["path"] == "/mcp" and await self._needs_more_scope(scope, body, send):
            return
        await self.app(scope, _replay(body, receive), send)

    async def _client_credentials(self, scope: Scope, body: bytes, send: Send) -> bool:
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") != "client_credentials":
            return False
        headers = dict(scope["headers"])
        basic = headers.get(b"authorization", b"").decode()
        client_id = secret = ""
        if basic.startswith("Basic "):
            client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            client_id, secret = unquote(client_id), unquote(secret)
        if self.provider.confidential.get(client_id) != secret or not secret:
            await _respond(send, 401, {"error": "invalid_client"}, [])
            return True
        wanted = form.get("scope", "mcp").split()
        if any(s not in SCOPES for s in wanted):
            await _respond(send, 400, {"error": "invalid_scope"}, [])
            return True
        _ledger("grant client_credentials", client_id, ",".join(sorted(wanted)))
        token = self.provider.issue(client_id, wanted, refreshable=False)
        await _respond(send, 200, token.model_dump(exclude_none=True), [])
        return True

    async def _needs_more_scope(self, scope: Scope, body: bytes, send: Send) -> bool:
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return False
        needed = STEP_UP.get(message.get("params", {}).get("name", ""))
        if needed is None:
            return False
        bearer = dict(scope["headers"]).get(b"authorization", b"").decode().removeprefix("Bearer ")
        token = await self.provider.load_access_token(bearer)
        if token is None or needed in token.scopes:
            return False  # the SDK's own check answers 401; enough scope goes through
        _ledger("step-up", token.client_id, needed)
        challenge = (
            f'Bearer error="insufficient_scope", scope="{" ".join([*token.scopes, needed])}", '
            f'resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"'
        )
        await _respond(
            send, 403, {"error": "insufficient_scope"}, [(b"www-authenticate", challenge.encode())]
        )
        return True


def build(port: int) -> tuple[ASGIApp, DemoProvider]:
    """The server's app and its authorization server's state."""
    base = f"http://127.0.0.1:{port}"
    provider = DemoProvider(
        json.loads(os.environ.get("DEMO_CLIENTS", "{}")),
        int(os.environ.get("DEMO_TOKEN_TTL", "3600")),
    )
    server = MCPServer(
        "protected",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(base),
            resource_server_url=AnyHttpUrl(f"{base}/mcp"),
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["mcp"]
            ),
            required_scopes=["mcp"],
            validate_token_resource=False,
        ),
    )

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def whoami() -> str:
        """The client and scopes this call was authorized as."""
        token = get_access_token()
        assert token is not None
        _ledger("call whoami", token.client_id, ",".join(sorted(token.scopes)))
        return f"{token.client_id} {','.join(sorted(token.scopes))}"

    @server.tool()
    def charge(cents: int) -> str:
        """Charge a card: needs scope write."""
        token = get_access_token()
        assert token is not None
        _ledger("call charge", token.client_id, cents)
        return f"charged {cents} for {token.client_id}"

    return Gate(server.streamable_http_app(), provider, base), provider


def main() -> None:
    import uvicorn

    port = int(sys.argv[1])
    app, _provider = build(port)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
