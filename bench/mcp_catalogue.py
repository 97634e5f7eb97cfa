"""Request bytes per turn for an MCP server with a large catalogue, offered eagerly or deferred.

    python -m bench.mcp_catalogue [--tools 300]

The demo MCP server (tests/integration/mcp_demo_server.py, over stdio) is started with
``--tools`` extra tools. One agent turn is run with the server offered eagerly (every tool's
schema in the request) and one with it deferred (three discovery tools: search, describe,
call); each request is encoded as the OpenAI-compatible client sends it and its bytes counted.
Bytes, not time: the figure is exact and the same on every machine. The last line is
machine-readable:

    tools=300 eager_bytes=X deferred_bytes=Y ratio=Z
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from bench._arguments import zero_or_more
from psych_runtime import AgentSpec, ModelRef, Runtime, session
from psych_runtime.mcp import McpServer, McpStdio
from psych_runtime.model._openai_wire import request_body
from psych_runtime.ports import ModelRequest
from psych_runtime.testing import FakeModel

ROOT = Path(__file__).resolve().parents[1]


def demo_server(tools: int) -> McpStdio:
    """The demo server with `tools` extra catalogue tools."""
    return McpStdio(
        command=sys.executable,
        args=("-m", "tests.integration.mcp_demo_server", "stdio"),
        env={"PYTHONPATH": str(ROOT), "DEMO_CATALOGUE": str(tools)},
        cwd=str(ROOT),
    )


def request_bytes(request: ModelRequest) -> int:
    """The bytes of `request` as the OpenAI-compatible client sends it."""
    body = request_body(request, request.model.model, stream=False)
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())


def catalogue_agent(server: str, *, deferred: bool) -> AgentSpec:
    """An agent with the catalogue server `server`, offered eagerly or deferred."""
    return AgentSpec(
        name="catalogue",
        model=ModelRef(model="bench"),
        tools=(McpServer(name=server, deferred=deferred),),
    )


async def first_request(tools: int, *, deferred: bool) -> ModelRequest:
    """The first model request of a run whose agent has the catalogue server."""
    model = FakeModel().turn(text="done")
    runtime = Runtime(model=model, mcp_servers={"catalogue": demo_server(tools)})
    spec = catalogue_agent("catalogue", deferred=deferred)
    async with session(runtime=runtime) as s:
        view = await s.ask(spec, "find the tool for index 42")
    assert view.status == "completed", view.error
    return model.requests[0]


async def measure(tools: int) -> tuple[int, int]:
    """Request bytes of one turn: eager, then deferred."""
    eager = request_bytes(await first_request(tools, deferred=False))
    deferred = request_bytes(await first_request(tools, deferred=True))
    return eager, deferred


def main(argv: list[str] | None = None) -> None:
    """Print the request bytes both ways, and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--tools", type=zero_or_more, default=300, help="extra tools the demo server offers"
    )
    args = parser.parse_args(argv)
    eager, deferred = asyncio.run(measure(args.tools))
    print(f"eager: one turn's request is {eager} bytes ({args.tools} tool schemas)")
    print(f"deferred: one turn's request is {deferred} bytes (3 discovery tools)")
    print(
        f"tools={args.tools} eager_bytes={eager} deferred_bytes={deferred} "
        f"ratio={eager / deferred:.1f}"
    )


if __name__ == "__main__":
    main()
