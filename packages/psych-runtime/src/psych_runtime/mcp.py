"""MCP servers as tool sources: other people's tools, by the Model Context Protocol.

A spec names a server with `McpServer` (which of its tools, required or optional, deferred or
not); the worker's `Runtime` says how to reach it: ``mcp_servers={"github": McpHttp(...)}`` or
`McpStdio` for a command. Sessions are pooled per (tenant, server, credential), so one
tenant's credential never serves another's run. The server's tools are listed before every
model call, narrowed to the reference's allow-list and by the `Policy`, and offered as
``{server}__{tool}``. A call cut off by a crash is run again only when the tool is annotated
read-only or idempotent (recorded when the call starts); any other is settled ``unknown``.

A protected server reached over HTTP takes ``McpHttp(oauth=McpOAuth(...))``: client
credentials, or a person's consent through the application's `McpAuthorizer` (Psych runs no
HTTP server); tokens are kept per tenant in an `McpTokenStore` (`MemoryTokenStore` in the
box), refreshed and stepped up by the SDK, and never written to a run's log.

The SDK comes with the ``mcp`` extra (``psych-runtime[mcp]``).

    from psych_runtime.mcp import McpServer, McpStdio

    spec = AgentSpec(name="clock", model=ModelRef(model="gpt-4.1-mini"),
                     tools=[McpServer(name="time", tools=("get_current_time",))])
    runtime = Runtime(model=..., mcp_servers={
        "time": McpStdio(command="mcp-server-time", args=("--local-timezone", "UTC"))})
"""

from psych_core import MCP_SEPARATOR, McpServer
from psych_runtime import _claim
from psych_runtime.tools._mcp import (
    McpAuthorizationRequest,
    McpAuthorizationResponse,
    McpAuthorizer,
    McpConnection,
    McpHttp,
    McpOAuth,
    McpStdio,
    McpTokenKey,
    McpTokenStore,
    MemoryTokenStore,
)

__all__ = [
    "MCP_SEPARATOR",
    "McpAuthorizationRequest",
    "McpAuthorizationResponse",
    "McpAuthorizer",
    "McpConnection",
    "McpHttp",
    "McpOAuth",
    "McpServer",
    "McpStdio",
    "McpTokenKey",
    "McpTokenStore",
    "MemoryTokenStore",
]

_claim.claim_exports(__name__, globals(), __all__)
