"""Runs served to Agent2Agent (A2A) clients: functions the app mounts, no server of ours.

The official ``a2a-sdk`` speaks the protocol (its route builders parse requests and write
answers); this package gives it a request handler backed by Psych's public functions
(`RunRequestHandler`) and the Agent Card of a spec (`agent_card`). Modules:

- `_tasks`: a run's log read as an A2A task (state mapping, status message, output artifact).
- `_messages`: what an A2A message says, as a run's input or an answer.
- `_card`: `agent_card`.
- `_handler`: `RunRequestHandler`.

The SDK comes with the ``a2a`` extra (``psych-runtime[a2a]``). Without it these names still
import, so ``import psych_runtime`` never needs the extra; using one says how to install it.
"""

try:
    from psych_runtime._a2a_serve._card import agent_card
    from psych_runtime._a2a_serve._handler import RunRequestHandler, ScopedFor
except ModuleNotFoundError as missing:  # pragma: no cover - the dev environment has the SDK
    if (missing.name or "").split(".")[0] not in ("a2a", "starlette", "sse_starlette", "google"):
        raise
    from psych_runtime._a2a_serve._missing import (  # type: ignore[assignment]
        RunRequestHandler,
        ScopedFor,
        agent_card,
    )

__all__ = ["RunRequestHandler", "ScopedFor", "agent_card"]
