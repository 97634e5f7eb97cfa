"""The options `Worker` and `session()` took one by one before `Runtime` carried them.

They still work for one minor release, each with a `DeprecationWarning` that says where the
option lives now; they are translated into a `Runtime` here, so there is still one path.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from psych_runtime._deprecations import deprecated
from psych_runtime.runtime._config import Leases, Runtime

_RUNTIME = (
    "model",
    "tools",
    "clock",
    "secrets",
    "prices",
    "approval_rules",
    "cancel_grace",
    "sandbox",
    "egress",
    "policy",
)
_LEASES = {"lease_ttl": "ttl", "max_attempts": "max_attempts", "release_backoff": "release_backoff"}


def runtime_of(
    runtime: Runtime | None, options: Mapping[str, Any], where: str, *, stacklevel: int = 3
) -> Runtime:
    """`runtime`, or one made of the options given one by one (each warned about)."""
    unknown = sorted(set(options) - set(_RUNTIME) - set(_LEASES))
    if unknown:
        raise TypeError(f"{where} got unexpected keyword argument(s): {', '.join(unknown)}")
    if not options:
        if runtime is None:
            raise TypeError(f"{where} needs a Runtime: {where}(store, Runtime(model=...))")
        return runtime
    if runtime is not None:
        raise TypeError(
            f"{where} got a Runtime and options one by one ({', '.join(sorted(options))}): "
            "put them in the Runtime (runtime.replace(...))"
        )
    named = ", ".join(
        f"{name}= (now Runtime(leases=Leases({_LEASES[name]}=...)))"
        if name in _LEASES
        else f"{name}= (now Runtime({name}=...))"
        for name in sorted(options)
    )
    deprecated(
        f"{where}'s keyword options are deprecated: {named}; pass one Runtime instead",
        stacklevel=stacklevel,
    )
    if "model" not in options:
        raise TypeError(f"{where} needs a model: Runtime(model=...)")
    leases: dict[str, Any] = {_LEASES[n]: v for n, v in options.items() if n in _LEASES}
    fields = {name: value for name, value in options.items() if name in _RUNTIME}
    if fields.get("tools") is None:
        fields.pop("tools", None)
    if fields.get("approval_rules") is None:
        fields.pop("approval_rules", None)
    if fields.get("clock") is None:
        fields.pop("clock", None)
    if "ttl" in leases and not isinstance(leases["ttl"], dt.timedelta):
        raise TypeError(f"{where}: lease_ttl must be a datetime.timedelta")
    return Runtime(leases=Leases(**leases), **fields)
