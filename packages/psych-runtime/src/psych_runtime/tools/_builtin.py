"""What the built-in tools (``ask_user``, ``load_skill``, ``remember``, ``forget``) say for
themselves: the spec does not list them, so the reducer cannot look their safety up there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psych_core import ApprovalRule


class SafeBuiltIn:
    """A built-in tool (`SelfJudging`): safe to run again after a crash, recorded when each
    call starts; never needing approval."""

    def safe_to_retry(self, arguments: Mapping[str, Any]) -> bool:
        """Always: a built-in asks the same question again, reads the same skill again, or is
        idempotent by the call's key."""
        return True

    def approval_rule(self, arguments: Mapping[str, Any]) -> ApprovalRule:
        """Never: a built-in touches only the run's own conversation and user."""
        return False
