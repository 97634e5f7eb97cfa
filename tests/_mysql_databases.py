"""Fresh MySQL/MariaDB databases for tests, on the server that PSYCH_TEST_MYSQL_DSN names.

Each test (or test run) gets a database of its own, ``<base>_<random>`` beside the base
database of the DSN, dropped when it is done: tests never see each other's runs. The DSN's
user needs CREATE and DROP on those databases (root on a development server;
`scripts/services/mariadb.sh start` prints a DSN that has them).

When the server cannot be reached the test FAILS, naming the command that starts it: a
store test never skips for a missing server.
"""

from __future__ import annotations

import os
import urllib.parse
import uuid

import aiomysql  # type: ignore[import-untyped]
import pytest

DEFAULT_DSN = "mysql://root@127.0.0.1:3306/psych_test"
DSN = os.environ.get("PSYCH_TEST_MYSQL_DSN", DEFAULT_DSN)


class _QuietCursor(aiomysql.Cursor):  # type: ignore[misc]
    """A cursor that leaves the server's notes alone (``DROP DATABASE IF EXISTS`` leaves one
    when there is nothing to drop; aiomysql would turn it into a Python warning)."""

    async def _show_warnings(self, conn: object) -> None:
        return None


def _parts() -> urllib.parse.SplitResult:
    return urllib.parse.urlsplit(DSN)


def url_for(database: str) -> str:
    """The DSN with another database."""
    return urllib.parse.urlunsplit(_parts()._replace(path=f"/{database}"))


def base_database() -> str:
    """The database the DSN names (fresh databases are named after it)."""
    return urllib.parse.unquote(_parts().path.lstrip("/")) or "psych_test"


async def admin() -> aiomysql.Connection:
    """A plain connection to the server, without a database; fails the test if there is no
    server."""
    parts = _parts()
    try:
        return await aiomysql.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 3306,
            user=urllib.parse.unquote(parts.username or "root"),
            password=urllib.parse.unquote(parts.password or ""),
            autocommit=True,
            connect_timeout=5,
            cursorclass=_QuietCursor,
        )
    except Exception as exc:
        pytest.fail(
            f"no MySQL/MariaDB server at {parts.hostname}:{parts.port or 3306} for "
            f"PSYCH_TEST_MYSQL_DSN={DSN!r} ({exc}). Start one with "
            "`scripts/services/mariadb.sh start` (or `scripts/dev-services.sh start`) and "
            "export the PSYCH_TEST_MYSQL_DSN it prints."
        )


async def execute(sql: str) -> list[tuple[object, ...]]:
    """Run one statement on an admin connection; return its rows."""
    conn = await admin()
    try:
        async with conn.cursor() as cursor:
            await cursor.execute(sql)
            return list(await cursor.fetchall())
    finally:
        conn.close()


async def create_database() -> str:
    """A new empty database; returns its name."""
    name = f"{base_database()}_{uuid.uuid4().hex[:12]}"
    await execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    return name


async def drop_database(name: str) -> None:
    """Drop a database `create_database` made."""
    await execute(f"DROP DATABASE IF EXISTS `{name}`")
