"""Opening a store from a URL, the same way in the test process and in the processes it starts."""

from __future__ import annotations

from psych_runtime.ports import Store


def open_store(url: str) -> Store:
    """A store for `url`: ``sqlite:///path/to/file``, ``memory:`` (this process only),
    ``postgresql://...?schema=NAME&max_size=N&retry_for=S`` or ``mysql://user@host:port/database``."""
    if url.startswith("sqlite:///"):
        from psych_store_sqlite import SQLiteStore

        return SQLiteStore(url.removeprefix("sqlite://"))
    if url == "memory:":
        from psych_runtime import MemoryStore

        return MemoryStore()
    if url.startswith(("postgresql://", "postgres://")):
        # postgresql://user:pw@host:port/db?schema=NAME&max_size=N&retry_for=S: the store's
        # options are taken out of the query; the rest is the DSN asyncpg reads.
        from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

        from psych_store_postgres import PostgresStore

        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query))
        schema = options.pop("schema", "psych")
        max_size = int(options.pop("max_size", "10"))
        retry_for = float(options.pop("retry_for", "10"))
        dsn = urlunsplit(parts._replace(query=urlencode(options)))
        return PostgresStore(dsn, schema=schema, max_size=max_size, retry_for=retry_for)
    if url.startswith(("mysql://", "mariadb://")):
        from psych_store_mysql import MySQLStore

        return MySQLStore(url)
    if url.startswith("dynamodb://"):
        # dynamodb://HOST:PORT/TABLE?region=R: a DynamoDB endpoint such as moto's, over http;
        # dynamodb:///TABLE?region=R: AWS itself. Credentials come from the environment.
        from urllib.parse import parse_qsl, urlsplit

        from psych_store_dynamodb import DynamoDBStore

        parts = urlsplit(url)
        region = dict(parse_qsl(parts.query)).get("region")
        endpoint = f"http://{parts.netloc}" if parts.netloc else None
        return DynamoDBStore(parts.path.lstrip("/"), region_name=region, endpoint_url=endpoint)
    raise ValueError(f"no store for URL {url!r}")
