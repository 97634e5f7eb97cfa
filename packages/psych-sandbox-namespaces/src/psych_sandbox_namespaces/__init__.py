"""psych_sandbox_namespaces: Psych Runtime's kernel sandbox on Linux.

`NamespaceSandbox` runs each program with bubblewrap in fresh user, pid, net, ipc, uts and mount
namespaces, over a read-only minimal root, with every capability dropped, no new privileges, a
seccomp filter, and memory and process limits in a cgroup of its own (v1 or v2; rlimits where
cgroups are not writable). It reaches the ``kernel`` isolation level, and grades each execution
from what it actually set up. Elsewhere (macOS, Windows, Linux without bubblewrap) it refuses
every request for isolation: it never approximates.
"""

from psych_sandbox_namespaces._sandbox import (
    DEFAULT_READ_PATHS,
    EGRESS_READ_PATHS,
    NamespaceSandbox,
)
from psych_sandbox_namespaces._seccomp import DENIED as SECCOMP_DENIED

__all__ = ["DEFAULT_READ_PATHS", "EGRESS_READ_PATHS", "SECCOMP_DENIED", "NamespaceSandbox"]

NamespaceSandbox.__module__ = __name__
