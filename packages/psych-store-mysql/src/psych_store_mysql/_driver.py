"""The driver seam: aiomysql connections, typed, opened with the settings the store relies on.

aiomysql ships no type information, so this is the one module that touches it; the rest of
the store sees `Connection` and `Result`. It reads two parts aiomysql keeps to itself, the
same from 0.2.0 (the oldest release the store admits) to today's: the stream reader
(`Connection.looks_broken`) and the connection's last answer (`Connection.batch`).

Every connection runs with:

- ``autocommit`` on: a statement outside ``START TRANSACTION ... COMMIT`` commits alone;
- ``READ COMMITTED``: each statement reads what is committed when it starts, and locking
  reads lock only the rows they return (no gap locks to deadlock on);
- ``time_zone = '+00:00'``: ``DATETIME`` values are UTC, and so is ``NOW()``;
- a ``sql_mode`` of our own: strict (a value that does not fit is an error, never
  truncated), without ``NO_BACKSLASH_ESCAPES`` or ``ANSI_QUOTES`` (see `_literals`);
- ``innodb_lock_wait_timeout``: how long a statement waits for a row lock;
- ``utf8mb4``, and the ``FOUND_ROWS`` flag: an ``UPDATE`` reports the rows it matched;
- on MariaDB, ``idle_transaction_timeout``: a session left inside a transaction longer than
  any call may take (its client is gone without closing the socket: a host lost, a network
  cut) is ended by the server, which rolls it back and frees its row locks. MySQL has no such
  setting; there the session lasts until the server notices the dead socket.
"""

from __future__ import annotations

import contextlib
import ssl
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import aiomysql  # type: ignore[import-untyped]
from pymysql.constants import CLIENT  # type: ignore[import-untyped]

from psych_adapter_kit import read_in_pieces

SQL_MODE = (
    "STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
    "NO_ENGINE_SUBSTITUTION"
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the server is and how to talk to it; the password never appears in `repr`."""

    host: str
    port: int
    user: str
    password: str
    database: str
    unix_socket: str | None = None
    connect_timeout: float = 10.0
    lock_wait_timeout: int = 10
    idle_transaction_timeout: int = 31
    ssl: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        return f"mysql://{self.user}@{self.where}"

    @property
    def where(self) -> str:
        """``host:port/database`` (or the socket), for messages."""
        if self.unix_socket:
            return f"{self.unix_socket}/{self.database}"
        return f"{self.host}:{self.port}/{self.database}"


class Result(NamedTuple):
    """One statement's outcome: the rows it matched (or returned), the rows it returned, and
    the ``LAST_INSERT_ID(expr)`` it set (0 when none)."""

    rowcount: int
    rows: tuple[tuple[Any, ...], ...]
    insert_id: int = 0


class Connection:
    """One server session.

    Attributes:
        sent: whether a statement was sent since the pool cleared it (so its effect is
            unknown when the answer is lost).
        last_used: `time.monotonic` of the last statement.
    """

    __slots__ = ("_in_doubt", "_max_packet", "_raw", "last_used", "sent")

    def __init__(self, raw: Any, max_packet: int) -> None:
        self._raw = raw
        self._max_packet = max_packet
        self._in_doubt = False
        self.sent = False
        self.last_used = time.monotonic()

    @property
    def in_doubt(self) -> bool:
        """Whether the last text sent was not answered in full (an error part-way, a lost
        connection, a cancelled call): which of its statements ran, and whether a
        transaction is open, is then unknown, so the session must be closed, never reused."""
        return self._in_doubt

    @property
    def closed(self) -> bool:
        """Whether the socket is closed."""
        return bool(self._raw.closed)

    @property
    def in_transaction(self) -> bool:
        """Whether the server says a transaction is open on this session."""
        return bool(self._raw.get_transaction_status())

    @property
    def server_version(self) -> str:
        """The version string the server announced."""
        return str(self._raw.get_server_info())

    def looks_broken(self) -> bool:
        """Whether the server already closed this idle connection (restarted, or timed out).

        A pooled connection is checked before reuse, so a server restart costs no call an
        error. It reads aiomysql's stream reader; if that ever changes, the answer is
        "not broken" and the first statement finds out instead.
        """
        reader = getattr(self._raw, "_reader", None)
        if reader is None:
            return True
        try:
            return bool(
                reader.at_eof() or reader.exception() or getattr(reader, "eof_received", False)
            )
        except Exception:
            return False

    def set_max_packet(self, max_packet: int) -> None:
        """The server's ``max_allowed_packet``: no statement longer than it is sent."""
        self._max_packet = max_packet

    async def batch(self, sql: str) -> list[Result]:
        """Send `sql` (one or more statements separated by ``;``) in one round trip and read
        every statement's result, in order.

        The server runs the statements in order and stops at the first error, which is raised
        here after the results before it were read; a transaction the batch opened is then
        still open, and the caller must roll it back or close the connection.

        Never send a write and the ``COMMIT`` that makes it durable in one text: the server may
        run such a text differently from what it says once its client has gone. MariaDB keeps
        running the statements after it failed to send one's answer, with ``ROW_COUNT()`` of
        that statement -1, so writes conditioned on it are skipped and the ``COMMIT`` commits
        the rest. A ``COMMIT`` sent alone, after every answer of the transaction was read and
        checked, commits only what the client saw.
        """
        if 4 * len(sql) >= self._max_packet:  # a character is at most 4 bytes of UTF-8
            size = len(sql.encode())
            if size >= self._max_packet:
                raise PacketTooLarge(size, self._max_packet)
        raw = self._raw
        self.sent = True
        self._in_doubt = True
        self.last_used = time.monotonic()
        # The connection's own reads, without a cursor: a cursor copies each answer into
        # itself and back out, about a quarter of what reading an answer costs.
        await raw.query(sql)
        results = [_result(raw._result)]
        while raw._result.has_next:
            await raw.next_result()
            results.append(_result(raw._result))
        self._in_doubt = False
        return results

    async def one(self, sql: str) -> Result:
        """Send one statement and return its result."""
        return (await self.batch(sql))[-1]

    def close(self) -> None:
        """Close the socket at once (the server rolls back what the session left open)."""
        self._raw.close()

    async def quit(self) -> None:
        """Say goodbye to the server, then close."""
        try:
            await self._raw.ensure_closed()
        except Exception:
            self._raw.close()


def _result(answer: Any) -> Result:
    """One statement's answer, as aiomysql's connection read it (a ``MySQLResult``)."""
    return Result(int(answer.affected_rows), answer.rows or (), int(answer.insert_id or 0))


class PacketTooLarge(Exception):
    """A statement longer than the server's ``max_allowed_packet``: never sent."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"a statement of {size} bytes is over max_allowed_packet ({limit})")


async def connect(settings: Settings, max_packet: int) -> Connection:
    """Open a connection with the session settings in force."""
    # /*M!100300 ... */ is run by MariaDB 10.3 and later, and is a comment to MySQL.
    init = (
        "SET SESSION time_zone = '+00:00', "
        f"SESSION sql_mode = '{SQL_MODE}', "
        f"SESSION innodb_lock_wait_timeout = {int(settings.lock_wait_timeout)}"
        "/*M!100300 , SESSION idle_transaction_timeout = "
        f"{int(settings.idle_transaction_timeout)} */; "
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
    )
    raw = await aiomysql.connect(
        host=settings.host,
        port=settings.port,
        user=settings.user,
        password=settings.password,
        db=settings.database,
        unix_socket=settings.unix_socket,
        charset="utf8mb4",
        autocommit=True,
        init_command=init,
        connect_timeout=settings.connect_timeout,
        client_flag=CLIENT.FOUND_ROWS,
        ssl=settings.ssl,
        program_name="psych-store-mysql",
    )
    # Each reply read in pieces below glibc's mmap threshold, not 256 KiB at a time, so that
    # a statement's answer does not map and unmap a buffer (`read_in_pieces`); aiomysql
    # keeps its socket's transport in its stream writer.
    writer = getattr(raw, "_writer", None)
    read_in_pieces(getattr(writer, "transport", None))
    return Connection(raw, max_packet)


def close_quietly(connection: Connection) -> None:
    """Close a connection from a finalizer, where its event loop may be closed already."""
    with contextlib.suppress(RuntimeError):  # a closed loop cannot schedule the cleanup
        connection.close()
