"""Whether the store a URL names answers, and whether its schema is the adapter's, read-only
and within a timeout.

The store is opened as `psych inspect` opens it (`open_store`: a SQLite file must exist) and
asked for its schema version (`psych_runtime.ports.schema_version`: the last migration it
applied, against the newest its adapter knows). A schema behind or ahead of the adapter is the
problem reported; otherwise the store is asked for one page of one tenant's runs: a read every
store serves, which needs the Psych schema to be there. Nothing is created, migrated, locked
or written.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from dataclasses import dataclass
from pathlib import Path

import psych_runtime
from psych_cli._doctor_facts import installed_version
from psych_cli._exit import CliError, ExitCode
from psych_cli._stores import display_url, open_store
from psych_runtime import RunQuery, Scope

PROBE_TENANT = "default"
"""The tenant whose first page of runs the probe asks for. Any tenant would do: the answer
is not shown, only that there is one."""

SCHEMA_NOT_READ = "not read: this store's adapter does not report its schema version"

UP_TO_DATE = "up to date"
"""The verdict on a store whose schema is the adapter's newest; any other verdict is a problem."""

VERDICTS: dict[str, str] = {
    "current": UP_TO_DATE,
    "behind": "behind: run the migration",
    "ahead": "newer than this adapter",
}
"""The verdict on each `SchemaVersion.state`."""

# The first 16 bytes of every SQLite database file, and where its header says WAL mode.
_SQLITE_MAGIC = b"SQLite format 3\x00"
_WAL = 2


@dataclass(frozen=True, slots=True)
class SchemaFacts:
    """The store's schema version against the adapter's.

    Attributes:
        applied: the last migration the store applied, 0 for none (None: not read).
        known: the newest migration the installed adapter knows (its ``SCHEMA_VERSION``).
        verdict: ``up to date``, ``behind: run the migration`` or ``newer than this
            adapter`` (`VERDICTS`); None when `applied` was not read.
        note: why `applied` is None.
    """

    applied: int | None
    known: int | None
    verdict: str | None = None
    note: str | None = SCHEMA_NOT_READ


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What the store check found.

    Attributes:
        url: the URL, its password masked.
        adapter: the adapter's distribution and version (``psych-store-sqlite 0.1.0``), when
            it could be imported.
        answers: it answered a read that needs the Psych schema.
        seconds: how long that read took.
        problem: why it is not fine (it does not answer, holds no Psych schema, ...).
        hint: what to do about `problem`.
        schema: its schema version, when it answered.
    """

    url: str
    adapter: str | None = None
    answers: bool = False
    seconds: float | None = None
    problem: str | None = None
    hint: str | None = None
    schema: SchemaFacts | None = None


async def check_store(url: str, timeout: float) -> StoreFacts:
    """Whether the store `url` names answers within `timeout` seconds; never writes to it.

    Raises:
        CliError: ``USAGE`` when `url` is not a store URL the command knows. Every other
            failure (adapter not installed, no such SQLite file, no answer) is in the result.
    """
    shown = display_url(url)
    try:
        store = open_store(url)
    except CliError as error:
        if error.code is ExitCode.USAGE:
            raise
        return StoreFacts(shown, problem=error.message, hint=error.hint)
    module = type(store).__module__
    distribution = module.replace("_", "-")
    adapter = f"{distribution} {installed_version(distribution) or '?'}"
    declared = getattr(importlib.import_module(module), "SCHEMA_VERSION", None)
    known = declared if isinstance(declared, int) else None
    try:
        refused = _untouchable_sqlite(store)
        if refused is not None:
            return StoreFacts(shown, adapter, problem=refused[0], hint=refused[1])
        started = time.monotonic()
        async with asyncio.timeout(timeout):
            found = await psych_runtime.ports.schema_version(store)
            if found is not None and found.state != "current":
                # The listing would fail, or read a schema its adapter does not know: the
                # version says what is wrong and what to do.
                return _schema_problem(shown, distribution, adapter, found)
            await store.scoped(Scope(tenant=PROBE_TENANT)).list_runs(RunQuery(limit=1))
        seconds = time.monotonic() - started
    except TimeoutError:
        return StoreFacts(
            shown,
            adapter,
            problem=f"no answer within {timeout:g} s",
            hint="check that it runs and that this host reaches it; --timeout waits longer",
        )
    except (psych_runtime.errors.PsychError, OSError) as error:
        return StoreFacts(
            shown,
            adapter,
            problem=str(error),
            hint="check that it is reachable and that your app has migrated it "
            "(await store.migrate() at start-up)",
        )
    finally:
        await _close(store, timeout)
    schema = (
        SchemaFacts(applied=None, known=known)
        if found is None
        else SchemaFacts(found.applied, found.known, VERDICTS[found.state], note=None)
    )
    return StoreFacts(shown, adapter, answers=True, seconds=seconds, schema=schema)


def _schema_problem(
    shown: str, distribution: str, adapter: str, found: psych_runtime.ports.SchemaVersion
) -> StoreFacts:
    """The facts of a store whose schema is not the adapter's: behind it, or ahead of it."""
    schema = SchemaFacts(found.applied, found.known, VERDICTS[found.state], note=None)
    knows = f"{adapter} knows version {found.known}"
    if found.applied == 0:
        problem = f"it holds no Psych schema: no migration was applied ({knows})"
        hint = (
            "check that the URL names your app's store, then migrate it: your app's start-up "
            "calls await store.migrate()"
        )
    elif found.state == "behind":
        problem = f"its schema is at version {found.applied}; {knows}"
        hint = "migrate it with this adapter: your app's start-up calls await store.migrate()"
    else:
        problem = f"its schema is at version {found.applied}; {knows}: a newer release migrated it"
        hint = f"upgrade {distribution} where this command and your app run"
    return StoreFacts(shown, adapter, problem=problem, hint=hint, schema=schema)


def _untouchable_sqlite(store: psych_runtime.ports.Store) -> tuple[str, str] | None:
    """Why a SQLite file must not be opened by a read-only command, with a hint, or None.

    `SQLiteStore` switches every file it opens to WAL mode, and SQLite writes a header into
    an empty file: either would change a file this command only reads. A file the store made
    is in WAL mode already, so its header says whether opening it changes anything.
    """
    path = getattr(store, "path", None)
    if type(store).__name__ != "SQLiteStore" or not isinstance(path, str):
        return None
    with Path(path).open("rb") as file:
        header = file.read(100)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return (
            f"{path} is not a SQLite database (SQLiteStore would write one into it)",
            "check the path: the file an app's SQLiteStore uses holds its runs",
        )
    if header[18] != _WAL or header[19] != _WAL:
        return (
            f"{path} is a SQLite database that is not in WAL mode, so no SQLiteStore has "
            "used it; opening it would switch it to WAL, and psych doctor writes nothing",
            "check the path: the file an app's SQLiteStore uses holds its runs",
        )
    return None


async def _close(store: psych_runtime.ports.Store, timeout: float) -> None:
    # A store that never answered may not close promptly either: the check has a deadline.
    try:
        async with asyncio.timeout(timeout):
            await store.close()
    except (TimeoutError, psych_runtime.errors.PsychError, OSError):
        pass  # the process ends next; what it held goes with it
