"""The words sandbox isolation is stated in, shared by tool specs and the `Sandbox` port."""

from __future__ import annotations

from typing import Literal

Guarantee = Literal[
    "wall_time_limited",
    "cpu_time_limited",
    "memory_limited",
    "process_count_limited",
    "output_limited",
    "reads_confined",
    "writes_confined",
    "network_isolated",
    "process_isolated",
    "unprivileged",
]
"""One of the ten guarantees an execution is graded on (see `psych_core.ports` Sandbox)."""

IsolationLevel = Literal["none", "limited", "kernel"]
"""``none``: nothing proved; ``limited``: resource limits only; ``kernel``: namespaces or a
container on top of the limits."""

Network = Literal["none", "egress"]
"""What network a request asks for: nothing but its own loopback, or outbound access."""
