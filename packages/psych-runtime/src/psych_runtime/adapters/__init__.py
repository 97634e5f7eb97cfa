"""Adapters in the box: they implement core ports and import nothing else of the runtime."""

from psych_runtime.adapters._memory_store import MemoryStore

__all__ = ["MemoryStore"]
