"""asyncpg's errors, sorted by what the store does about them.

- *Not sent*: the store could not get a connection (refused, the server starting or shutting
  down, too many connections, a timeout while connecting). Nothing reached the database, so
  every operation is tried again, with backoff, for up to the store's ``retry_for``.
- *Rolled back*: a serialization failure or a deadlock. The server undid the transaction, so it
  is sent again at once.
- *Lost in flight*: the connection broke (or timed out) while a statement was out. It may or
  may not have committed. An operation that can tell (an append recognises its own batch by its
  id) is sent again; one that cannot raises `StoreUnavailable` saying so.
- Everything else is the caller's problem or the operator's: a `StoreError` that says which.
"""

from __future__ import annotations

from typing import Protocol

from asyncpg import exceptions as pg

from psych_core import Claim, StoreError, StoreUnavailable

_REFUSED_AT_CONNECT = (
    OSError,  # connection refused, host unreachable, reset during the handshake
    TimeoutError,
    pg.CannotConnectNowError,  # the server is starting up or shutting down
    pg.TooManyConnectionsError,
    pg.ObjectNotInPrerequisiteStateError,  # the database does not accept connections for now
    pg.AdminShutdownError,
    pg.CrashShutdownError,
    pg.PostgresConnectionError,
)

_LOST = (
    OSError,
    TimeoutError,
    pg.AdminShutdownError,  # pg_terminate_backend, or a server shutting down
    pg.CrashShutdownError,
    pg.CannotConnectNowError,
    pg.PostgresConnectionError,  # includes "connection was closed in the middle of operation"
    pg.InterfaceError,  # "connection is closed" (only counted as lost when it is: see lost())
)

_ROLLED_BACK = (pg.SerializationError, pg.DeadlockDetectedError)


class _Closable(Protocol):
    def is_closed(self) -> bool: ...


class Handoff(Exception):
    """Raised by an operation for the store to act on; never reaches the store's caller."""


class NotCommitted(Handoff):
    """An operation lost its connection before it could have committed: send it again."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class ClaimUnknown(Handoff):
    """The connection broke while the COMMIT of a claim that started an attempt was in flight.
    Its `AttemptStarted` record tells whether it landed."""

    def __init__(self, claim: Claim, body: bytes, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.claim = claim
        self.body = body
        self.cause = cause


def refused_at_connect(exc: BaseException) -> bool:
    """Whether `exc`, raised while getting a connection, is worth waiting out."""
    return isinstance(exc, _REFUSED_AT_CONNECT)


def lost(exc: BaseException, conn: _Closable | None) -> bool:
    """Whether `exc`, raised by a statement, means the connection broke under it."""
    if isinstance(exc, pg.InterfaceError):
        return conn is None or is_closed(conn)
    return isinstance(exc, _LOST)


def is_closed(conn: _Closable) -> bool:
    """Whether the connection is gone; a pooled connection that broke has been handed back to
    the pool already, and asking it anything raises: that counts as gone too."""
    try:
        return conn.is_closed()
    except pg.InterfaceError:
        return True


def broken_before_sending(exc: BaseException) -> bool:
    """Whether asyncpg refused to send on a connection it found broken.

    A server that terminates an idle connection sends an error the connection reads while
    idle; until the socket's end arrives, the pool may lend it, and asyncpg then refuses to
    start a statement on it ("another operation is in progress") before sending anything.
    """
    return isinstance(exc, pg.InternalClientError)


def rolled_back(exc: BaseException) -> bool:
    """Whether the server undid the transaction (serialization failure, deadlock)."""
    return isinstance(exc, _ROLLED_BACK)


def unavailable(where: str, what: str, exc: BaseException, seconds: float) -> StoreUnavailable:
    """The error for an operation that could not reach the database within `seconds`."""
    return StoreUnavailable(
        f"Postgres store {where}: {what} could not reach the database for {seconds:g} s "
        f"({_describe(exc)}); check that the server is up and reachable, then try again"
    )


def uncertain(where: str, what: str, exc: BaseException, hint: str) -> StoreUnavailable:
    """The error for an operation whose connection broke while it was in flight."""
    return StoreUnavailable(
        f"Postgres store {where}: the connection broke while {what} was in flight "
        f"({_describe(exc)}), so it may or may not have been applied; {hint}"
    )


def translate(where: str, what: str, exc: Exception) -> StoreError:
    """A driver error that is neither transient nor a refusal of the contract, as a StoreError."""
    if isinstance(exc, pg.UndefinedTableError | pg.InvalidSchemaNameError):
        return StoreError(
            f"Postgres store {where}: {what} found no Psych tables ({exc}); call "
            "`await store.migrate()` once before using the store"
        )
    if isinstance(exc, pg.InsufficientPrivilegeError):
        return StoreError(
            f"Postgres store {where}: {what} was refused ({exc}); grant the store's role the "
            "privileges listed in psych-store-postgres's README"
        )
    if isinstance(exc, pg.InvalidPasswordError | pg.InvalidAuthorizationSpecificationError):
        return StoreError(
            f"Postgres store {where}: the server refused the login ({exc}); check the user "
            "and password in the DSN and the server's pg_hba.conf"
        )
    if isinstance(exc, pg.InvalidCatalogNameError):
        return StoreError(
            f"Postgres store {where}: the database does not exist ({exc}); create it "
            "(CREATE DATABASE) or fix the DSN"
        )
    if isinstance(exc, pg.ReadOnlySQLTransactionError):
        return StoreUnavailable(
            f"Postgres store {where}: {what} reached a read-only server ({exc}); point the "
            "DSN at the primary (after a failover, retry once it is promoted)"
        )
    return StoreError(f"Postgres store {where}: {what} failed: {_describe(exc)}")


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name
