"""`agent_card`: the A2A Agent Card of a spec, for the SDK's card route to serve."""

from __future__ import annotations

from collections.abc import Sequence

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from psych_core import AgentSpec, WorkflowSpec

_TEXT = "text/plain"
_JSON = "application/json"


def agent_card(
    spec: AgentSpec | WorkflowSpec,
    *,
    url: str,
    rest_url: str | None = None,
    description: str | None = None,
    version: str | None = None,
    skills: Sequence[AgentSkill] | None = None,
    provider: str | None = None,
    documentation_url: str | None = None,
) -> AgentCard:
    """The Agent Card that tells A2A clients about `spec`'s runs and where to send messages.

    Args:
        spec: the agent (or workflow) whose runs the routes admit.
        url: where the JSON-RPC route is mounted, as clients reach it
            (``https://example.com/a2a``).
        rest_url: where the HTTP+JSON (REST) routes are mounted, when the app serves them too.
        description: what the agent does. The card is public: by default it is the first
            line of the spec's instructions, so pass one when they should stay private.
        version: the agent's version; by default the spec's version (``sha256:...``), which
            changes whenever the spec does.
        skills: the card's skills; by default one per `Skill` of the spec (its name and
            description), or one for the spec itself when it has none.
        provider: the organization that runs the agent.
        documentation_url: where people can read about it.

    Streaming is on (runs are streamed from their log); push notifications are off.
    """
    interfaces = [_interface(url, TransportProtocol.JSONRPC)]
    if rest_url is not None:
        interfaces.append(_interface(rest_url, TransportProtocol.HTTP_JSON))
    about = description if description is not None else _summary(spec)
    structured = isinstance(spec, WorkflowSpec) or spec.output_type is not None
    outputs = [_JSON] if structured else [_TEXT]
    inputs = [_JSON] if isinstance(spec, WorkflowSpec) else [_TEXT, _JSON]
    card = AgentCard(
        name=spec.name,
        description=about,
        supported_interfaces=interfaces,
        version=version if version is not None else spec.version,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=inputs,
        default_output_modes=outputs,
        skills=list(skills) if skills is not None else _skills(spec, about),
    )
    if provider is not None:
        card.provider.CopyFrom(AgentProvider(organization=provider, url=documentation_url or ""))
    if documentation_url is not None:
        card.documentation_url = documentation_url
    return card


def _interface(url: str, binding: str) -> AgentInterface:
    return AgentInterface(
        url=url, protocol_binding=binding, protocol_version=PROTOCOL_VERSION_CURRENT
    )


def _summary(spec: AgentSpec | WorkflowSpec) -> str:
    instructions = spec.instructions if isinstance(spec, AgentSpec) else ""
    first = next((line.strip() for line in instructions.splitlines() if line.strip()), "")
    kind = "workflow" if isinstance(spec, WorkflowSpec) else "agent"
    return first or f"The {spec.name} {kind}, run by Psych Runtime."


def _skills(spec: AgentSpec | WorkflowSpec, about: str) -> list[AgentSkill]:
    own = spec.skills if isinstance(spec, AgentSpec) else ()
    if not own:
        return [AgentSkill(id=spec.name, name=spec.name, description=about, tags=[spec.name])]
    return [
        AgentSkill(
            id=skill.name,
            name=skill.name,
            description=skill.description or f"{skill.name} ({spec.name})",
            tags=[spec.name],
        )
        for skill in own
    ]
