"""Test doubles that ship with the library, and the store contract suite.

`FakeModel` is the model double (`MemoryStore`, the store double, is exported at the top).
`StoreContract` certifies a `Store` adapter; it is imported on first use, since it needs
pytest (the ``psych-runtime[testing]`` extra): ``psych_runtime.testing.store_contract``.
"""

from typing import TYPE_CHECKING

from psych_runtime.testing.fake_model import FakeModel

if TYPE_CHECKING:
    from psych_runtime.testing.store_contract import StoreContract

__all__ = ["FakeModel", "StoreContract"]


def __getattr__(name: str) -> object:
    # Lazy, so importing psych_runtime.testing for FakeModel never imports pytest.
    if name == "StoreContract":
        from psych_runtime.testing.store_contract import StoreContract

        return StoreContract
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
