"""Tool results of a real size: rows of a listing, as a search or a database tool returns."""

from __future__ import annotations

import json

from pydantic import JsonValue


def listing(result_bytes: int) -> list[JsonValue]:
    """Rows whose JSON is about `result_bytes` long (none for fewer bytes than a row)."""
    rows_of = result_bytes // len(json.dumps(_row(0)))
    return [_row(n) for n in range(rows_of)]


def _row(n: int) -> JsonValue:
    return {"id": n, "name": f"item {n}", "price": n * 1.5, "tags": ["a", "b"], "in_stock": True}
