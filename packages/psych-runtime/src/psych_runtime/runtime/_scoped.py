"""The guard every per-run public function passes first: a scoped store, then its policy."""

from __future__ import annotations

from psych_core import PolicyAction, ScopedStore


def authorize(store: object, action: PolicyAction, target: str, *, function: str) -> None:
    """Check that `store` is scoped (the only handle a per-run function takes), then ask its
    policy for `action` on `target` (`PolicyDenied`).

    Raises `TypeError` for a plain store, saying how to scope it: a plain store would let a
    caller act on any tenant's runs.
    """
    if not isinstance(store, ScopedStore):
        raise TypeError(
            f"{function}() takes a scoped store, not {type(store).__name__}: pass "
            f"store.scoped(Scope(tenant=...)) so that the call acts for one tenant "
            "(Worker and due() take the plain store, since they serve every tenant)"
        )
    store.authorize(action, target)
