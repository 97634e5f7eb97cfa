"""`schema_version`: which migrations a store has, for operators' tools; read-only."""

from __future__ import annotations

from psych_core.ports import SchemaVersion, Store, VersionedSchema
from psych_runtime.adapters._offloading_store import OffloadingStore


async def schema_version(store: Store) -> SchemaVersion | None:
    """The store's schema version against its adapter's newest, or None when it does not say.

    Read-only, as `VersionedSchema.schema_version` promises: nothing is created, migrated or
    locked, so it is safe on a store in use (``psych doctor --store URL`` reports it). A store
    without a versioned schema (`MemoryStore`), or an adapter that does not implement
    `VersionedSchema`, answers None; an `OffloadingStore` answers for the store it wraps.

    Raises:
        StoreUnavailable: the store cannot be reached now (safe to retry).
        StoreError: the store refused the read.
    """
    while isinstance(store, OffloadingStore):
        store = store.store
    if isinstance(store, VersionedSchema):
        return await store.schema_version()
    return None
