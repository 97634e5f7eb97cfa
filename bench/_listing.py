"""Tool results of a real size: rows of a listing, as a search or a database tool returns."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import JsonValue


def listing(result_bytes: int) -> list[JsonValue]:
    """Rows whose JSON is about `result_bytes` long (none for fewer bytes than a row)."""
    rows_of = result_bytes // len(json.dumps(_row(0)))
    return [_row(n) for n in range(rows_of)]


def with_listing(
    tool: Callable[..., Awaitable[dict[str, Any]]], result_bytes: int
) -> Callable[..., Awaitable[object]]:
    """`tool` (an async tool answering an object), its answer also carrying a listing of about
    `result_bytes` under ``rows``; `tool` itself for fewer bytes than a row. The wrapper has
    the tool's name, parameters and description, so a spec names it as it names the tool."""
    rows = listing(result_bytes)
    if not rows:
        return tool

    @functools.wraps(tool)
    async def listed(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**await tool(*args, **kwargs), "rows": rows}

    return listed


def _row(n: int) -> JsonValue:
    return {"id": n, "name": f"item {n}", "price": n * 1.5, "tags": ["a", "b"], "in_stock": True}
