"""How a worker reaches an MCP server: the deployment half of an `McpServer` reference.

A spec names a server; ``Runtime(mcp_servers={name: McpStdio(...) | McpHttp(...)})`` says how
to reach it and with which credential. Nothing here imports the MCP SDK, so a runtime without
the ``mcp`` extra can still be configured (and says what is missing when a run needs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from psych_core import Scope
from psych_runtime.tools._credentials import check_secret_name, check_templates, secret_for
from psych_runtime.tools._mcp._authorization import McpOAuth


@dataclass(frozen=True, slots=True, kw_only=True)
class McpStdio:
    """An MCP server the worker starts as a subprocess and talks to over its stdin and stdout.

    Attributes:
        command: the program to run.
        args: its arguments.
        env: environment variables for it (the SDK adds a minimal safe environment);
            ``{credential}`` in a value takes the credential's value.
        cwd: its working directory; the worker's when None.
        credential: the name of the secret the server is given, resolved through the
            runtime's `SecretResolver` for each run's scope: ``{tenant}`` in it takes the
            scope's tenant (``"GITHUB_TOKEN_{tenant}"``). None for no credential.
        timeout: seconds to wait for the server to start and list its tools.
    """

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    credential: str | None = None
    timeout: float = 30.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        check_templates("env", self.env, self.credential)
        check_secret_name("credential", self.credential)


@dataclass(frozen=True, slots=True, kw_only=True)
class McpHttp:
    """An MCP server reached over streamable HTTP, through the egress seam.

    The connection obeys the runtime's `EgressPolicy` like every outbound request: the URL's
    host must be allowed and resolve to addresses the policy accepts (loopback and private
    addresses only when it says so).

    Attributes:
        url: the server's MCP endpoint (``https://host/mcp``).
        headers: headers sent with every request; ``{credential}`` in a value takes the
            credential's value (``{"Authorization": "Bearer {credential}"}``).
        credential: the name of the secret, as for `McpStdio.credential`.
        timeout: seconds to wait to connect and list the tools, and for each request's
            response to begin.
        oauth: OAuth 2.1 for a protected server (`McpOAuth`): tokens are fetched, kept per
            tenant, refreshed and stepped up by the SDK, and sent as the Authorization header.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    credential: str | None = None
    timeout: float = 30.0
    oauth: McpOAuth | None = None

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"McpHttp url must be http:// or https://, not {self.url!r}")
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))
        check_templates("headers", self.headers, self.credential)
        check_secret_name("credential", self.credential)
        if self.oauth is not None and any(k.lower() == "authorization" for k in self.headers):
            raise ValueError("McpHttp with oauth sends its own Authorization header: drop it")


McpConnection = McpStdio | McpHttp
"""How to reach one MCP server."""


def credential_name(connection: McpConnection, scope: Scope) -> str | None:
    """The name of the secret `connection` uses for runs of `scope`, or None."""
    return secret_for(connection.credential, scope)
