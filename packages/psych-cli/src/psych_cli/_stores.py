"""Opening a store from a URL, importing its adapter only when that URL asks for it.

- ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``: `SQLiteStore`
  (psych-store-sqlite); the file must exist.
- ``postgresql://user:pw@host:port/db?schema=psych``: `PostgresStore` (psych-store-postgres);
  ``schema`` is the store's option, the rest is the DSN.
- ``mysql://user:pw@host:port/db``: `MySQLStore` (psych-store-mysql).
- ``dynamodb://TABLE?region=R&endpoint_url=URL&claim_shards=N``: `DynamoDBStore`
  (psych-store-dynamodb).

The command only reads: it never calls `migrate` or any method that writes.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from psych_cli._exit import CliError, ExitCode

if TYPE_CHECKING:
    from psych_runtime.ports import Store

URL_FORMS = (
    "sqlite:///relative/path.db, sqlite:////absolute/path.db, "
    "postgresql://user:password@host:5432/database, mysql://user:password@host:3306/database, "
    "dynamodb://table?region=eu-west-1"
)


@dataclass(frozen=True, slots=True)
class _Adapter:
    module: str
    cls: str
    distribution: str
    extra: str


_ADAPTERS = {
    "sqlite": _Adapter("psych_store_sqlite", "SQLiteStore", "psych-store-sqlite", "sqlite"),
    "postgresql": _Adapter(
        "psych_store_postgres", "PostgresStore", "psych-store-postgres", "postgres"
    ),
    "mysql": _Adapter("psych_store_mysql", "MySQLStore", "psych-store-mysql", "mysql"),
    "dynamodb": _Adapter(
        "psych_store_dynamodb", "DynamoDBStore", "psych-store-dynamodb", "dynamodb"
    ),
}
_SCHEMES = {
    "sqlite": "sqlite",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "dynamodb": "dynamodb",
}


def display_url(url: str) -> str:
    """`url` with any password replaced by ``***``, for messages and headers."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def open_store(url: str) -> Store:
    """The store `url` names, not yet connected (adapters connect on first use).

    Raises:
        CliError: ``USAGE`` for a URL of no known form; ``STORE`` when the adapter is not
            installed (the message names what to install) or a SQLite file does not exist.
    """
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    kind = _SCHEMES.get(scheme)
    if kind is None:
        raise CliError(
            f"{display_url(url)!r} is not a store URL this command knows",
            ExitCode.USAGE,
            hint=f"use one of: {URL_FORMS}",
        )
    cls = _load(_ADAPTERS[kind])
    try:
        return _OPENERS[kind](cls, url)
    except ValueError as error:  # the adapter's own check of its URL or options
        raise CliError(f"{display_url(url)}: {error}", ExitCode.USAGE) from None


def _load(adapter: _Adapter) -> Any:
    try:
        module = importlib.import_module(adapter.module)
    except ImportError as error:
        missing = error.name or adapter.module
        raise CliError(
            f"the {adapter.cls} adapter cannot be imported ({missing} is not installed)",
            ExitCode.STORE,
            hint=(
                "install it from this project's wheelhouse (scripts/wheelhouse.sh builds it): "
                f'pip install --no-index --find-links "$PSYCH_WHEELHOUSE" {_install_hint(adapter)}'
            ),
        ) from None
    return getattr(module, adapter.cls)


def _install_hint(adapter: _Adapter) -> str:
    # Name the psych-runtime extra when the installed psych-runtime has it, else the adapter's
    # own distribution, so the command given always works.
    try:
        extras = importlib.metadata.metadata("psych-runtime").get_all("Provides-Extra") or []
    except importlib.metadata.PackageNotFoundError:
        extras = []
    if adapter.extra in extras:
        return f'"psych-runtime[{adapter.extra}]"'
    return adapter.distribution


def _sqlite(cls: Any, url: str) -> Store:
    rest = url.split("://", 1)[1]
    if not rest.startswith("/") or len(rest) < 2:
        raise CliError(
            f"{url!r} names no file",
            ExitCode.USAGE,
            hint="write sqlite:///relative/path.db or sqlite:////absolute/path.db",
        )
    path = Path(urllib.parse.unquote(rest[1:]))
    if not path.is_file():
        # SQLite would create an empty file: a read-only command must not.
        raise CliError(
            f"there is no SQLite file at {path} (from {url})",
            ExitCode.STORE,
            hint="check the path: sqlite:///relative/path.db or sqlite:////absolute/path.db",
        )
    store: Store = cls(path)
    return store


def _postgres(cls: Any, url: str) -> Store:
    # ?schema=NAME is the store's option, not a server setting: take it out of the DSN.
    parts = urllib.parse.urlsplit(url)
    options = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in options if key == "schema"), "psych")
    query = urllib.parse.urlencode([(key, value) for key, value in options if key != "schema"])
    store: Store = cls(urllib.parse.urlunsplit(parts._replace(query=query)), schema=schema)
    return store


def _mysql(cls: Any, url: str) -> Store:
    store: Store = cls(url)
    return store


def _dynamodb(cls: Any, url: str) -> Store:
    parts = urllib.parse.urlsplit(url)
    if not parts.netloc:
        raise CliError(
            f"{url!r} names no table", ExitCode.USAGE, hint="write dynamodb://TABLE?region=..."
        )
    options = dict(urllib.parse.parse_qsl(parts.query))
    unknown = set(options) - {"region", "endpoint_url", "claim_shards"}
    if unknown:
        raise CliError(
            f"unknown option(s) in {url!r}: {', '.join(sorted(unknown))}",
            ExitCode.USAGE,
            hint="dynamodb:// URLs take region, endpoint_url and claim_shards",
        )
    keywords: dict[str, Any] = {
        "region_name": options.get("region"),
        "endpoint_url": options.get("endpoint_url"),
    }
    if "claim_shards" in options:
        keywords["claim_shards"] = int(options["claim_shards"])
    store: Store = cls(parts.netloc, **keywords)
    return store


_OPENERS: dict[str, Callable[[Any, str], Store]] = {
    "sqlite": _sqlite,
    "postgresql": _postgres,
    "mysql": _mysql,
    "dynamodb": _dynamodb,
}
