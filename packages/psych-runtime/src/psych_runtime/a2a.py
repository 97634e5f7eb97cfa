"""Agent2Agent (A2A): remote agents as tool sources, and runs served to A2A clients.

Consuming a peer: a spec names it with `A2APeer` (which of its skills, required or
optional); the worker's `Runtime` says how to reach it: ``a2a_peers={"travel": A2AHttp(...)}``.
Connections are pooled per (tenant, peer, credential), so one tenant's credential never serves
another's run. The peer's Agent Card is read through the egress seam (kept for
``A2AHttp.card_ttl`` seconds), and each skill on it, narrowed to the reference's allow-list
and by the `Policy`, is offered as ``{peer}__{skill}``. A call sends the peer a message and
follows the task to its end; a call cut off (the run cancelled, its timeout) cancels the
remote task. A call cut off by a crash is run again only when the card tags the skill
``read-only`` or ``idempotent`` (`SAFE_SKILL_TAGS`) or the spec lists it in
``A2APeer.safe_skills`` (recorded when the call starts); any other is settled ``unknown``.

The SDK comes with the ``a2a`` extra (``psych-runtime[a2a]``).

    from psych_runtime.a2a import A2AHttp, A2APeer

    spec = AgentSpec(name="planner", model=ModelRef(model="gpt-4.1-mini"),
                     tools=[A2APeer(name="travel", skills=("book_hotel",))])
    runtime = Runtime(model=..., a2a_peers={
        "travel": A2AHttp(url="https://travel.example.com", credential="TRAVEL_{tenant}",
                          headers={"Authorization": "Bearer {credential}"})})

Serving runs: `RunRequestHandler` is the SDK's request handler backed by Psych (message send
is `dispatch`, task get reads the log as `status` does, streaming is `stream`, cancel is
`cancel`; the task id is the run id; a run waiting on a tool's `WaitFor` or a human step is
``input-required`` and a message on the task answers it); `agent_card` builds the Agent Card
from a spec. The app mounts the SDK's route builders with them: Psych runs no server. Who the
caller is comes from the app's own function of the request, never from the message.

    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from psych_runtime.a2a import RunRequestHandler, agent_card

    handler = RunRequestHandler(spec, scoped=scoped_store)  # scoped_store(request) -> ScopedStore
    routes = [*create_agent_card_routes(agent_card(spec, url="https://example.com/a2a")),
              *create_jsonrpc_routes(handler, "/a2a", context_builder=handler.context_builder)]
"""

import typing as _typing

from psych_core import A2APeer
from psych_runtime import _claim
from psych_runtime.tools import A2AConnection, A2AHttp
from psych_runtime.tools._a2a import SAFE_SKILL_TAGS

if _typing.TYPE_CHECKING:
    from psych_runtime._a2a_serve import RunRequestHandler, agent_card

_SERVING = ("RunRequestHandler", "agent_card")
"""The names that serve runs to A2A clients: imported on first use, since the SDK's server
side (its protobuf types, Starlette and FastAPI routes) takes most of a second to import and
an app that only consumes peers, or none, never needs it."""

__all__ = [
    # Consuming: remote agents' skills as tools
    "SAFE_SKILL_TAGS",
    "A2AConnection",
    "A2AHttp",
    "A2APeer",
    # Serving: runs to A2A clients
    "RunRequestHandler",
    "agent_card",
]

_claim.claim_exports(__name__, globals(), [name for name in __all__ if name not in _SERVING])


if not _typing.TYPE_CHECKING:
    # Hidden from type checkers, which see the two names imported above and no others.

    def __getattr__(name: str) -> object:
        if name not in _SERVING:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from psych_runtime import _a2a_serve

        serving = {each: getattr(_a2a_serve, each) for each in _SERVING}
        _claim.claim_exports(__name__, serving, _SERVING)
        globals().update(serving)
        return serving[name]
