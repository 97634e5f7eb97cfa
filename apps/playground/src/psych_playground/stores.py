"""Opening the store a URL names: the SQLite file or the PostgreSQL database every playground
process shares, and the live text channel that goes with it.

    sqlite:///relative/path.db, sqlite:////absolute/path.db    SQLiteStore
    postgresql://user:password@host:5432/database?schema=psych PostgresStore, PostgresLiveChannel

On PostgreSQL the model's words cross processes by LISTEN/NOTIFY (`PostgresLiveChannel`): the
worker publishes them, the server's `/text` stream shows them. On SQLite there is no channel
between processes, and chat screens get each message whole, from the log.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from psych_runtime.ports import LiveChannel, Store
from psych_store_postgres import PostgresLiveChannel, PostgresStore
from psych_store_sqlite import SQLiteStore

StoreKind = Literal["sqlite", "postgresql"]


class StoreUrlError(ValueError):
    """PSYCH_STORE is not a URL the playground can open; the message shows the forms it takes."""


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A parsed PSYCH_STORE.

    Attributes:
        path: the SQLite file (``sqlite``).
        dsn: the PostgreSQL DSN without the ``schema`` option (``postgresql``).
        schema: the PostgreSQL schema of the store's tables (``psych`` by default).
    """

    kind: StoreKind
    path: Path | None = None
    dsn: str | None = None
    schema: str = "psych"


FORMS = "sqlite:///relative/path.db, sqlite:////absolute/path.db, postgresql://user:pw@host/db"


def parse_store_url(url: str) -> StoreUrl:
    """What `url` names; `StoreUrlError` for any other form."""
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest.startswith("/") or len(rest) < 2:
            raise StoreUrlError(f"PSYCH_STORE {display_url(url)!r} names no file; use {FORMS}")
        return StoreUrl("sqlite", path=Path(urllib.parse.unquote(rest[1:])))
    if scheme in ("postgresql", "postgres"):
        # ?schema=NAME is the store's option, not a server setting: take it out of the DSN.
        parts = urllib.parse.urlsplit(url)
        options = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        schema = next((value for key, value in options if key == "schema"), "psych")
        query = urllib.parse.urlencode([(key, value) for key, value in options if key != "schema"])
        dsn = urllib.parse.urlunsplit(parts._replace(query=query))
        return StoreUrl("postgresql", dsn=dsn, schema=schema)
    raise StoreUrlError(f"PSYCH_STORE {display_url(url)!r} is not a store URL; use {FORMS}")


def display_url(url: str) -> str:
    """`url` with its password replaced by ``***``, for messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    return urllib.parse.urlunsplit(
        parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1))
    )


def open_store(url: StoreUrl) -> Store:
    """The store `url` names, not connected yet; call `migrate()` before use."""
    if url.kind == "sqlite":
        assert url.path is not None
        url.path.parent.mkdir(parents=True, exist_ok=True)
        return SQLiteStore(url.path)
    assert url.dsn is not None
    return PostgresStore(url.dsn, schema=url.schema, application_name="psych-playground")


def open_live_channel(url: StoreUrl) -> LiveChannel | None:
    """The channel the model's words travel on between processes, or None (SQLite)."""
    if url.kind == "sqlite":
        return None
    assert url.dsn is not None
    return PostgresLiveChannel(url.dsn, schema=url.schema, application_name="psych-playground")
