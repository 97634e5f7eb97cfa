"""The tools each `A2APeer` reference offers a run this turn, from the peer's Agent Card."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping

from a2a.utils.errors import A2AError

from psych_core import A2APeer, EgressError, Policy, Scope, SecretNotFound, SecretResolver
from psych_runtime.tools._a2a._config import A2AConnection
from psych_runtime.tools._a2a._pool import A2APool
from psych_runtime.tools._a2a._skills import TOOL_NAME, A2ASkillCall, log
from psych_runtime.tools._http import EgressPolicy


class PeerUnavailable(Exception):
    """A peer's skills could not be had this turn; the message names the peer and why."""


class A2ATools:
    """The A2A peers a worker can reach, and the connections it holds to them.

    Args:
        connections: how to reach each peer, by the name specs use.
        secrets: where the peers' credentials come from.
        egress: the rules every request obeys.
    """

    def __init__(
        self,
        connections: Mapping[str, A2AConnection],
        secrets: SecretResolver | None,
        egress: EgressPolicy | None,
    ) -> None:
        self.pool = A2APool(connections, secrets, egress)

    async def offered(
        self,
        ref: A2APeer,
        scope: Scope,
        policy: Policy | None,
        allowed: Collection[str] | None,
    ) -> Mapping[str, A2ASkillCall]:
        """The skills `ref` offers a run of `scope`, by the names the model sees: the peer's
        card (read again once its time to live has passed), narrowed to the reference's
        allow-list, to `allowed` (a child run) and by `policy`.

        Raises `PeerUnavailable` naming the peer when its card cannot be had.
        """
        connection = self.pool.connection(ref.name)
        try:
            async with asyncio.timeout(connection.timeout):
                peer = await self.pool.peer(ref.name, scope)
                card = await peer.card()
        except TimeoutError:
            raise PeerUnavailable(
                f"A2A peer {ref.name!r} did not answer within {connection.timeout:g} s"
            ) from None
        except (A2AError, EgressError, SecretNotFound) as exc:
            raise PeerUnavailable(f"A2A peer {ref.name!r} cannot be reached: {exc}") from None
        tools: dict[str, A2ASkillCall] = {}
        for skill in card.skills:
            name = ref.tool_name(skill.id)
            if not ref.offers(skill.id) or name in tools:
                continue
            if not TOOL_NAME.match(name):
                log.warning(
                    "A2A peer %r: skill %r cannot be named %r; left out", ref.name, skill.id, name
                )
                continue
            tools[name] = A2ASkillCall(ref, card.name, skill, peer)
        if allowed is not None:
            tools = {name: tool for name, tool in tools.items() if name in allowed}
        if policy is not None and tools:
            kept = set(policy.narrow(scope, tuple(tools)))
            tools = {name: tool for name, tool in tools.items() if name in kept}
        return tools

    async def aclose(self) -> None:
        """Close every connection."""
        await self.pool.aclose()
