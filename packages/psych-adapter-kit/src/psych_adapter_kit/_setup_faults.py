"""Where a sandbox backend asks whether a test wants one guarantee's setup to really fail.

The sandbox contract proves that a setup step that fails at run time is graded so and that the
output is withheld; to prove it, a test makes one step fail for real (a limit written wrong,
left out of a request). The backend asks `SETUP_FAULTS` at the start of each run and fails that
step when told to. Nothing in production arms it: only
`psych_runtime.testing.sandbox_faults.failing_setup` does, for the ``with`` block it wraps.
The state is a context variable, so another task, or a thread not started from the block, never
sees it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator
from contextvars import ContextVar
from typing import Final

from psych_core import Guarantee


class SetupFaultHook:
    """The hook point: backends read it (`wanted`), the test harness arms it (`armed`)."""

    def __init__(self) -> None:
        self._armed: ContextVar[Guarantee | None] = ContextVar(
            "psych_sandbox_setup_fault", default=None
        )

    def wanted(self, backend: str, can_fail: Collection[Guarantee]) -> Guarantee | None:
        """The guarantee whose setup `backend` must make really fail in this run, or None (which
        is always the answer outside a test).

        Args:
            backend: the sandbox's name, for the error.
            can_fail: the guarantees whose setup this backend knows how to make fail.

        Raises:
            ValueError: a test armed a guarantee that is not in `can_fail`: a run that injected
                nothing must not pass for one that did.
        """
        guarantee = self._armed.get()
        if guarantee is None or guarantee in can_fail:
            return guarantee
        raise ValueError(
            f"the {backend} sandbox can make the setup of {sorted(can_fail)} fail, not of "
            f"{guarantee!r}: arm one of those with failing_setup()"
        )

    @contextlib.contextmanager
    def armed(self, guarantee: Guarantee) -> Iterator[None]:
        """Within the block, runs in this context make the setup of `guarantee` fail.

        For `psych_runtime.testing.sandbox_faults` only: production code never calls it.
        """
        token = self._armed.set(guarantee)
        try:
            yield
        finally:
            self._armed.reset(token)


SETUP_FAULTS: Final = SetupFaultHook()
"""The one hook point every sandbox backend reads."""
