"""Driver errors sorted by what may be done about them, and translated into the core's.

Three kinds:

- ``ROLLED_BACK``: a deadlock or a lock wait that timed out. The server undid the statement
  (a deadlock, the whole transaction; the store then closes the connection, which undoes the
  rest), so running the call again is always safe.
- ``UNREACHABLE``: no connection, a connection lost, a server shutting down or read-only
  for a failover. Safe to run again only when nothing was sent, or when the call is
  idempotent; otherwise `StoreUnavailable`.
- ``REFUSED``: everything else: a `StoreError` that says what to fix.
"""

from __future__ import annotations

import enum

from pymysql import err  # type: ignore[import-untyped]

from psych_core import StoreError, StoreUnavailable
from psych_store_mysql._driver import PacketTooLarge, Settings


class Kind(enum.Enum):
    """What a failure allows."""

    ROLLED_BACK = "rolled back"
    UNREACHABLE = "unreachable"
    REFUSED = "refused"


_ROLLED_BACK = frozenset(
    {
        1205,  # ER_LOCK_WAIT_TIMEOUT
        1213,  # ER_LOCK_DEADLOCK
        1020,  # ER_CHECKREAD: MariaDB's "record has changed since last read"
        1637,  # ER_TOO_MANY_CONCURRENT_TRXS
    }
)
_UNREACHABLE = frozenset(
    {
        1040,  # ER_CON_COUNT_ERROR: too many connections
        1053,  # ER_SERVER_SHUTDOWN
        1203,  # ER_TOO_MANY_USER_CONNECTIONS
        1290,  # ER_OPTION_PREVENTS_STATEMENT: --read-only (a failover in progress)
        1792,  # ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
        1836,  # ER_READ_ONLY_MODE
        1927,  # ER_CONNECTION_KILLED (MariaDB)
        2002,  # CR_CONNECTION_ERROR
        2003,  # CR_CONN_HOST_ERROR
        2005,  # CR_UNKNOWN_HOST
        2006,  # CR_SERVER_GONE_ERROR
        2013,  # CR_SERVER_LOST
        2055,  # CR_SERVER_LOST_EXTENDED
        4031,  # ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
    }
)
_FULL = frozenset({1021, 1114})  # ER_DISK_FULL, ER_RECORD_FILE_FULL


def errno_of(exc: BaseException) -> int | None:
    """The server's or client's error number, when `exc` carries one."""
    if isinstance(exc, err.MySQLError) and exc.args and isinstance(exc.args[0], int):
        return exc.args[0]
    return None


def classify(exc: BaseException) -> Kind:
    """What a failure allows (see the module docstring)."""
    if isinstance(exc, PacketTooLarge):
        return Kind.REFUSED
    code = errno_of(exc)
    if code in _ROLLED_BACK:
        return Kind.ROLLED_BACK
    if code in _UNREACHABLE or code in _FULL:
        return Kind.UNREACHABLE
    if isinstance(exc, err.InterfaceError | OSError | EOFError):
        return Kind.UNREACHABLE
    if isinstance(exc, err.InternalError) and code is None:  # e.g. a packet out of sequence
        return Kind.UNREACHABLE
    return Kind.REFUSED


def translate(exc: BaseException, settings: Settings, what: str) -> StoreError:
    """The core's error for a driver error that is not retried (any more).

    Args:
        what: the call that failed, e.g. ``"append to run R"``.
    """
    where = f"MySQL store {settings.where}"
    if isinstance(exc, PacketTooLarge):
        return StoreError(
            f"{where}: {what}: the statement is {exc.size} bytes, over the server's "
            f"max_allowed_packet of {exc.limit}; raise max_allowed_packet on the server, or "
            "give the store smaller limits"
        )
    code = errno_of(exc)
    message = str(exc.args[1]) if code is not None and len(exc.args) > 1 else str(exc)
    kind = classify(exc)
    if kind is Kind.ROLLED_BACK:
        return StoreUnavailable(
            f"{where}: {what}: the server kept rolling it back ({message}: other transactions "
            "hold the same rows); nothing was written, retry later"
        )
    if code in _FULL:
        return StoreUnavailable(f"{where}: {what}: {message}; free disk space on the server")
    if kind is Kind.UNREACHABLE:
        return StoreUnavailable(
            f"{where}: {what}: the server could not be reached or the connection was lost "
            f"({message or type(exc).__name__}); check that it runs and accepts connections, "
            "then retry"
        )
    if code == 1045:
        return StoreError(
            f"{where}: access denied for user {settings.user!r} ({message}); check the user "
            "and password in the store's URL"
        )
    if code == 1049:
        return StoreError(
            f"{where}: database {settings.database!r} does not exist; create it with "
            f"CREATE DATABASE `{settings.database}` CHARACTER SET utf8mb4"
        )
    if code == 1146:
        return StoreError(
            f"{where}: the Psych schema is missing ({message}); call `await store.migrate()` "
            "once before using the store"
        )
    if code in (1044, 1142, 1143, 1227, 1370):
        return StoreError(
            f"{where}: {what}: user {settings.user!r} lacks a privilege ({message}); grant the "
            "privileges listed in psych-store-mysql's README"
        )
    if code in (1663, 1664, 1665):
        return StoreError(
            f"{where}: {what}: {message}; the server logs statements (binlog_format="
            "STATEMENT), which InnoDB refuses under READ COMMITTED: set binlog_format=ROW"
        )
    if code == 1153:
        return StoreError(
            f"{where}: {what}: {message}; raise max_allowed_packet on the server, or give the "
            "store smaller limits"
        )
    if code == 1406:
        return StoreError(f"{where}: {what}: a value is longer than its column ({message})")
    return StoreError(f"{where}: {what}: {message}")
