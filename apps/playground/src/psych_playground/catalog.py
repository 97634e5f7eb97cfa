"""The catalog: the specs published in the playground, by name, every version kept.

Psych keeps each spec a run was admitted with (`Store.put_spec`, by version); what it does not
keep is which specs an app offers under which names, and in what order they were published.
That is the app's own data, and this is where the playground keeps it: one table in the store's
own database (`SqliteCatalog`, `PostgresCatalog`), so every server process sees the same
catalog and holds nothing of its own.

Publishing is idempotent: a spec's version is the hash of its canonical JSON, and publishing a
version that is already there changes nothing (``created`` is False).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue

from psych_playground.examples import ORDER_CHECK, SUPPORT
from psych_runtime import AgentSpec, WorkflowSpec

SpecKind = Literal["agent", "workflow"]


class KindConflict(ValueError):
    """A name is taken by a spec of the other kind (an agent's name by a workflow, or back)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One published version: `spec_json` is the spec's canonical JSON."""

    name: str
    kind: SpecKind
    version: str
    published_at: dt.datetime
    spec_json: str

    @property
    def spec_data(self) -> JsonValue:
        """The spec as JSON data, as an editor shows it."""
        data: JsonValue = json.loads(self.spec_json)
        return data

    def spec(self) -> AgentSpec | WorkflowSpec:
        """The spec itself."""
        if self.kind == "workflow":
            return WorkflowSpec.model_validate_json(self.spec_json)
        return AgentSpec.model_validate_json(self.spec_json)


@dataclass(frozen=True, slots=True)
class Summary:
    """A name in the catalog: its kind, its latest version and how many it has."""

    name: str
    kind: SpecKind
    latest_version: str
    versions: int
    published_at: dt.datetime


class Catalog(Protocol):
    """Where published specs are kept, per tenant. Every method is one transaction."""

    async def migrate(self) -> None:
        """Create the catalog's table if it is missing; safe to run from several processes."""
        ...

    async def insert(self, tenant: str, entry: Entry) -> tuple[Entry, bool]:
        """Add `entry` unless its version of its name is there: the entry kept, and whether it
        was added. `KindConflict` when the name belongs to a spec of the other kind."""
        ...

    async def entries(self, tenant: str, name: str | None = None) -> list[Entry]:
        """The tenant's entries (only `name`'s, given one), by name, newest first."""
        ...

    async def find(self, tenant: str, name: str, version: str | None = None) -> Entry | None:
        """`name`'s entry of `version` (its latest when None), or None."""
        ...

    async def close(self) -> None:
        """Release connections; calling it again does nothing."""
        ...


def canonical_data(spec: AgentSpec | WorkflowSpec) -> JsonValue:
    """`spec` as the JSON data its version is the hash of: defaults left out, keys sorted."""
    data: JsonValue = json.loads(spec.canonical_json())
    return data


async def publish(
    catalog: Catalog, tenant: str, spec: AgentSpec | WorkflowSpec, *, now: dt.datetime
) -> tuple[Entry, bool]:
    """Publish `spec` under its name: the entry, and whether this version is new."""
    kind: SpecKind = "workflow" if isinstance(spec, WorkflowSpec) else "agent"
    entry = Entry(spec.name, kind, spec.version, now, spec.canonical_json())
    return await catalog.insert(tenant, entry)


async def seed(catalog: Catalog, tenant: str, *, now: dt.datetime) -> None:
    """Publish the example agent and workflow when the tenant's catalog is empty."""
    if await catalog.entries(tenant):
        return
    for spec in (SUPPORT, ORDER_CHECK):
        await publish(catalog, tenant, spec, now=now)


def summaries(entries: Sequence[Entry]) -> list[Summary]:
    """One summary per name, sorted by name, from entries listed by name, newest first."""
    found: dict[str, Summary] = {}
    for entry in entries:
        known = found.get(entry.name)
        found[entry.name] = (
            Summary(entry.name, entry.kind, entry.version, 1, entry.published_at)
            if known is None
            else dataclasses.replace(known, versions=known.versions + 1)
        )
    return [found[name] for name in sorted(found)]
