"""Numbered schema steps, as the SQL stores keep them, and which a schema still needs.

Migrations are append-only: a released step is never edited; a change is a new step. A store
records each step it applies; `migrate` asks `migrations_after` for the rest, and refuses a
schema a newer release of the store has moved past what this one knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
