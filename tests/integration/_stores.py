"""Opening a store from a URL, the same way in the test process and in the processes it starts."""

from __future__ import annotations

from psych_runtime import Store


def open_store(url: str) -> Store:
    """A store for `url`: ``sqlite:///path/to/file``, or ``memory:`` (this process only)."""
    if url.startswith("sqlite:///"):
        from psych_store_sqlite import SQLiteStore

        return SQLiteStore(url.removeprefix("sqlite://"))
    if url == "memory:":
        from psych_runtime import MemoryStore

        return MemoryStore()
    raise ValueError(f"no store for URL {url!r}")
