"""MCP servers as tool sources: configuration here; the SDK is imported only when a run needs
a server (`psych_runtime.tools._mcp._source`)."""

from psych_runtime.tools._mcp._authorization import (
    McpAuthorizationRequest,
    McpAuthorizationResponse,
    McpAuthorizer,
    McpOAuth,
    McpTokenKey,
    McpTokenStore,
    MemoryTokenStore,
)
from psych_runtime.tools._mcp._config import McpConnection, McpHttp, McpStdio

__all__ = [
    "McpAuthorizationRequest",
    "McpAuthorizationResponse",
    "McpAuthorizer",
    "McpConnection",
    "McpHttp",
    "McpOAuth",
    "McpStdio",
    "McpTokenKey",
    "McpTokenStore",
    "MemoryTokenStore",
]
