"""`AllowAll`: the policy in the box, for `session()` and apps without rules of their own."""

from __future__ import annotations

from collections.abc import Sequence

from psych_core import PolicyAction, Scope


class AllowAll:
    """A `Policy` that allows every action and offers every tool.

    What `session()` uses when given no policy. Tenancy still holds under it: a scope never
    reaches another tenant's runs, whatever the policy says.
    """

    def authorize(self, scope: Scope, action: PolicyAction, target: str) -> None:
        """Allow: return without raising."""
        return

    def narrow(self, scope: Scope, tools: Sequence[str]) -> tuple[str, ...]:
        """Keep every tool."""
        return tuple(tools)

    def __repr__(self) -> str:
        return "AllowAll()"
