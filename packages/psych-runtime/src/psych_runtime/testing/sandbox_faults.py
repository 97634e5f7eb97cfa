"""Setup failures for sandbox tests: make one guarantee's setup really fail at run time.

The sandbox contract (`sandbox_contract.SandboxContract`) proves that a setup step that fails
once the run has begun is graded so and that the output is withheld. This module is what makes
a step fail for real, with no constructor argument and nothing read from the environment: the
backends ask the adapter kit's hook point (`psych_adapter_kit.SETUP_FAULTS`) at the start of
every run, and only `failing_setup` arms it::

    with failing_setup("cpu_time_limited"):
        result = await SubprocessSandbox().run(request)

What each backend makes fail:

- `SubprocessSandbox`: ``cpu_time_limited`` (an RLIMIT_CPU the kernel refuses).
- `NamespaceSandbox`: ``memory_limited`` or ``process_count_limited`` (a cgroup limit written
  as a value the kernel refuses).
- `DockerSandbox`: ``memory_limited`` or ``process_count_limited`` (left out of the request to
  the engine, as an engine that ignores it would).

A backend asked for a guarantee it cannot make fail raises `ValueError` from `run`, naming
itself and what it can fail. A backend of your own consults the hook the same way:
``SETUP_FAULTS.wanted(self.name, can_fail)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from psych_adapter_kit import SETUP_FAULTS
from psych_core import GUARANTEES, Guarantee

__all__ = ["failing_setup"]


@contextlib.contextmanager
def failing_setup(guarantee: Guarantee) -> Iterator[None]:
    """Within the block, every sandbox run in this context makes the setup of `guarantee`
    really fail. Other tasks, and threads not started from the block, are not affected; the
    block must be entered and left in the same context (a plain ``with`` in the test)."""
    if guarantee not in GUARANTEES:
        raise ValueError(f"unknown guarantee {guarantee!r}; known: {', '.join(GUARANTEES)}")
    with SETUP_FAULTS.armed(guarantee):
        yield
