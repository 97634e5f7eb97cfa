"""An MCP server built with the SDK's server API, for the MCP tool-source tests.

Run over stdio: ``python -m tests.integration.mcp_demo_server stdio``; over streamable HTTP
on loopback: ``python -m tests.integration.mcp_demo_server http PORT``. Environment:
``DEMO_LEDGER`` (a file each effect appends a line to: tool, argument, pid), ``DEMO_TOKEN``
(the credential a stdio server was started with), ``DEMO_CATALOGUE`` (add that many extra
read-only tools, ``tool_000`` ...).

Tools: ``add`` (read-only), ``lookup`` (idempotent), ``charge`` (not annotated: destructive
and unsafe by MCP's defaults), ``slow`` (not annotated, sleeps), ``slow_read`` (read-only,
sleeps), ``whoami`` (read-only: the credential this request came with), ``grow`` (adds a tool
and says the list changed), ``die`` (the process exits mid-call), ``refuse`` (answers
``isError``), ``picture`` (an image and a text block).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent, ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True)
IDEMPOTENT = ToolAnnotations(idempotentHint=True, destructiveHint=False)

server = MCPServer("demo")


def _effect(tool: str, argument: object) -> None:
    ledger = os.environ.get("DEMO_LEDGER")
    if ledger:
        with open(ledger, "a", encoding="utf-8") as out:
            out.write(f"{tool} {argument} {os.getpid()}\n")
            out.flush()
            os.fsync(out.fileno())


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    _effect("add", f"{a}+{b}")
    return a + b


@server.tool(annotations=IDEMPOTENT)
def lookup(key: str) -> str:
    """Look a key up."""
    _effect("lookup", key)
    return f"value of {key}"


@server.tool()
def charge(cents: int) -> str:
    """Charge a card (not annotated: destructive and unsafe to repeat)."""
    _effect("charge", cents)
    return f"charged {cents}"


@server.tool()
async def slow(seconds: float) -> str:
    """Wait, then do an unsafe effect."""
    _effect("slow-begun", seconds)
    await asyncio.sleep(seconds)
    _effect("slow", seconds)
    return "slow done"


@server.tool(annotations=READ_ONLY)
async def slow_read(seconds: float) -> str:
    """Wait, then read."""
    _effect("slow_read-begun", seconds)
    await asyncio.sleep(seconds)
    return "read done"


@server.tool(annotations=READ_ONLY)
def whoami(ctx: Context) -> str:
    """The credential this request came with."""
    headers = ctx.headers or {}
    token = headers.get("authorization") or os.environ.get("DEMO_TOKEN") or "none"
    _effect("whoami", token.replace(" ", "_"))
    return token


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``fresh`` and tell listeners the list changed."""
    server.add_tool(lambda: "fresh", name="fresh", description="A tool added at run time.")
    await ctx.notify_tools_changed()
    return "grown"


@server.tool()
def die() -> str:
    """The server process exits in the middle of the call."""
    _effect("die", "-")
    os._exit(3)


@server.tool(annotations=READ_ONLY)
def refuse() -> str:
    """Always fails, as a result the model reads."""
    raise ToolError("the demo refuses")


@server.tool(annotations=READ_ONLY)
def picture() -> list[TextContent | ImageContent]:
    """A caption and a one-pixel image."""
    return [
        TextContent(type="text", text="a red pixel"),
        ImageContent(type="image", data="iVBORw0KGgo=", mimeType="image/png"),
    ]


def _catalogue(size: int) -> None:
    for i in range(size):
        name = f"tool_{i:03d}"

        def tool(query: str, limit: int = 10, name: str = name) -> str:
            return f"{name}: {query} ({limit})"

        server.add_tool(
            tool,
            name=name,
            description=(
                f"Catalogue tool number {i}: searches the {name} index of records by a "
                "query and returns at most limit matches, newest first."
            ),
            annotations=READ_ONLY,
        )


def main() -> None:
    """Serve over stdio or streamable HTTP."""
    _catalogue(int(os.environ.get("DEMO_CATALOGUE", "0")))
    if sys.argv[1] == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")


if __name__ == "__main__":
    main()
