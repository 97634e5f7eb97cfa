"""Reading a server-sent event stream as a browser's EventSource does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Event:
    event: str
    data: str
    id: str | None

    def json(self) -> Any:
        return json.loads(self.data)


def events(
    client: httpx.Client, path: str, *, headers: dict[str, str] | None = None, limit: int = 10_000
) -> Iterator[Event]:
    """The events of the stream at `path`, at most `limit`; the connection closes when the
    caller stops (a browser tab closed)."""
    with client.stream("GET", path, headers=headers, timeout=30.0) as response:
        assert response.status_code == 200, response.read().decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, list[str]] = {}
        count = 0
        for line in response.iter_lines():
            if line.startswith(":"):
                continue  # a keep-alive comment
            if line:
                name, _, value = line.partition(":")
                fields.setdefault(name, []).append(value.removeprefix(" "))
                continue
            if fields:
                ids = fields.get("id")
                yield Event(
                    event=fields.get("event", ["message"])[-1],
                    data="\n".join(fields.get("data", [])),
                    id=ids[-1] if ids else None,
                )
                count += 1
                fields = {}
                if count >= limit:
                    return
