"""Values as SQL literals, and the limits on the values the schema keeps.

Every statement is sent as text in one ``COM_QUERY`` (several statements in one round trip),
so values are written into it as literals, never formatted from user text any other way.
Connections run with a `sql_mode` this store sets itself, without ``NO_BACKSLASH_ESCAPES``
and ``ANSI_QUOTES``: inside single quotes a backslash escapes, so quoting a string is
doubling its backslashes and escaping its quotes and NUL bytes. That is all the server's
lexer needs, and it is far cheaper than a per-character table for bodies of megabytes.

A quoted string is at most twice its UTF-8 bytes plus two: what `max_allowed_packet` must
leave room for (see `packet_bytes_needed`).
"""

from __future__ import annotations

import datetime as dt
import hashlib

from psych_core import StoreError

MAX_ID_BYTES = 255
"""Ids, tenants, agent names, versions, worker ids and batch ids are ``VARBINARY(255)``."""

MAX_KEY_BYTES = 65535
"""Signal keys are kept whole in a ``BLOB`` (and compared by their SHA-256)."""

NEVER_BEFORE_SQL = "'1000-01-01 00:00:00.000000'"
"""``runnable_at`` of a run that is claimable at once: the smallest ``DATETIME``."""

NEVER_BEFORE = dt.datetime(1000, 1, 1)
"""The same, as the driver returns it (naive, UTC)."""

_FIXED_OVERHEAD = 64 * 1024
"""Room in a packet for an append's statements other than its values."""

_ROW_OVERHEAD = 4 * MAX_ID_BYTES + 256
"""Room per record for its id, batch id and the SQL around them, quoted (twice the bytes)."""


def text(value: str) -> str:
    """`value` as a quoted string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\0", "\\0") + "'"


def optional_text(value: str | None) -> str:
    """`value` quoted, or ``NULL``."""
    return "NULL" if value is None else text(value)


def integer(value: int) -> str:
    """`value` as an integer literal (never anything else: `int` refuses other text)."""
    return str(int(value))


def digest(value: str) -> str:
    """The SHA-256 of `value` as a binary literal: how keys of any length are compared."""
    return "X'" + hashlib.sha256(value.encode()).hexdigest() + "'"


def stamp(at: dt.datetime, what: str) -> str:
    """An aware datetime as a ``DATETIME(6)`` literal in UTC.

    Times before year 1000 (``DATETIME``'s smallest) mean "at once" and become that smallest
    time, as `NEVER_BEFORE_SQL` does.
    """
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"{what} {at.isoformat()} has no timezone: pass an aware UTC datetime")
    utc = at.astimezone(dt.UTC).replace(tzinfo=None)
    if utc < NEVER_BEFORE:
        return NEVER_BEFORE_SQL
    return "'" + utc.isoformat(sep=" ", timespec="microseconds") + "'"


def optional_stamp(at: dt.datetime | None, what: str) -> str:
    """`at` as a literal, or ``NULL``."""
    return "NULL" if at is None else stamp(at, what)


def from_stamp(value: dt.datetime) -> dt.datetime:
    """A ``DATETIME`` the driver returned (naive UTC) as an aware datetime.

    The smallest ``DATETIME`` ("at once") comes back as `datetime.min`, as from every store.
    """
    if value <= NEVER_BEFORE:
        return dt.datetime.min.replace(tzinfo=dt.UTC)
    return value.replace(tzinfo=dt.UTC)


def identifier(value: str, what: str) -> str:
    """`value` quoted, after checking that it fits a ``VARBINARY(255)`` column."""
    size = len(value.encode())
    if size > MAX_ID_BYTES:
        raise StoreError(
            f"{what} {value[:40]!r}... is {size} bytes of UTF-8; MySQLStore keeps "
            f"{what}s of up to {MAX_ID_BYTES} bytes: use a shorter one"
        )
    return text(value)


def optional_identifier(value: str | None, what: str) -> str:
    """`identifier`, or ``NULL``."""
    return "NULL" if value is None else identifier(value, what)


def signal_key(value: str, run_id: str) -> str:
    """A signal key quoted, after checking that it fits its ``BLOB`` column."""
    size = len(value.encode())
    if size > MAX_KEY_BYTES:
        raise StoreError(
            f"run {run_id}: signal key {value[:40]!r}... is {size} bytes; MySQLStore keeps "
            f"keys of up to {MAX_KEY_BYTES} bytes: use a shorter key"
        )
    return text(value)


def decode(value: bytes | str) -> str:
    """A ``VARBINARY`` or ``BLOB`` column's bytes as the text that was stored."""
    return value.decode() if isinstance(value, bytes) else value


def packet_bytes_needed(max_append_bytes: int, max_append_records: int) -> int:
    """The ``max_allowed_packet`` an append at the declared limits needs at worst.

    Every byte of a body may double when quoted (a JSON string of backslashes or quotes), and
    each record adds its ids and the SQL around them.
    """
    return 2 * max_append_bytes + max_append_records * _ROW_OVERHEAD + _FIXED_OVERHEAD
