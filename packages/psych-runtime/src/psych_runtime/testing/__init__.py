"""Test doubles that ship with the library: `FakeModel` (and `MemoryStore`, exported at the top)."""

from psych_runtime.testing.fake_model import FakeModel

__all__ = ["FakeModel"]
