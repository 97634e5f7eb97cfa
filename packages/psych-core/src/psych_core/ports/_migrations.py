"""Numbered schema steps, as the SQL stores keep them, and which a schema still needs.

Migrations are append-only: a released step is never edited; a change is a new step. A store
records each step it applies; `migrate` asks `migrations_after` for the rest, and refuses a
schema a newer release of the store has moved past what this one knows. A store that can say
where its schema is, without changing it, is a `VersionedSchema`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from psych_core._errors import StoreError


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema step: its statements, run in order."""

    version: int
    name: str
    statements: tuple[str, ...]


def migrations_after(
    migrations: Sequence[Migration], current: int, *, where: str, package: str
) -> tuple[Migration, ...]:
    """The steps of `migrations` (in version order) that a schema at `current` still needs.

    A schema past the last step was made by a newer `package`: `StoreError` naming `where`
    (a store, never its password), and nothing is to be applied.
    """
    latest = migrations[-1].version
    if current > latest:
        raise StoreError(
            f"{where}: the schema is at version {current}, newer than this {package} knows "
            f"({latest}); upgrade {package} in this process's environment"
        )
    return tuple(migration for migration in migrations if migration.version > current)


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """A store's schema against the adapter serving it: the migrations it has, and those the
    adapter knows.

    Attributes:
        applied: the last migration the store applied; 0 when it has none (no version table:
            it was never migrated).
        known: the newest migration the adapter knows (its package's ``SCHEMA_VERSION``).
    """

    applied: int
    known: int

    @property
    def state(self) -> Literal["current", "behind", "ahead"]:
        """``current``: the store has every migration the adapter knows. ``behind``: it lacks
        some (never migrated, or by an older release): the adapter's `migrate` applies them.
        ``ahead``: a newer release of the adapter migrated it past what this one knows, and
        this one's `migrate` refuses it: upgrade the adapter."""
        if self.applied < self.known:
            return "behind"
        if self.applied > self.known:
            return "ahead"
        return "current"


@runtime_checkable
class VersionedSchema(Protocol):
    """A store that can say which schema version it is at, without changing anything.

    Optional beside `Store`: a store without it still serves the runtime; operators' tools
    (``psych doctor``, `psych_runtime.ports.schema_version`) then say its version is not known.
    """

    async def schema_version(self) -> SchemaVersion:
        """Where the store's schema is, against what this adapter knows.

        Read-only: it never creates a table, a schema or a database file, never applies a
        migration and never takes the migration lock, so it is safe on a store in use and on
        one no process may change. A store that was never migrated answers ``applied=0``.

        Raises:
            StoreUnavailable: the store cannot be reached now (safe to retry).
            StoreError: the store refused the read (permissions, a damaged file, ...).
        """
        ...
