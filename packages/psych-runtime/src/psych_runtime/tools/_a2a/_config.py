"""How a worker reaches an A2A peer: the deployment half of an `A2APeer` reference.

A spec names a peer; ``Runtime(a2a_peers={name: A2AHttp(...)})`` says where its Agent Card is
and with which credential to call it. Nothing here imports the A2A SDK, so a runtime without
the ``a2a`` extra can still be configured (and says what is missing when a run needs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from psych_core import Scope
from psych_runtime.tools._credentials import check_secret_name, check_templates, secret_for

SAFE_SKILL_TAGS = ("read-only", "idempotent")
"""The tags by which a peer's Agent Card says a skill is safe to run again after a crash.

A2A has no field for it, so a skill says it with a tag (matched without regard to case);
a call of any other skill is settled ``unknown`` when a crash cuts it off.
"""

CARD_PATH = "/.well-known/agent-card.json"
"""Where A2A puts an agent's card, under its base URL."""


@dataclass(frozen=True, slots=True, kw_only=True)
class A2AHttp:
    """An A2A peer reached over HTTP (JSON-RPC, with server-sent events when the peer
    streams), through the egress seam.

    Every request (the card, the calls, the event streams) obeys the runtime's
    `EgressPolicy`: the host must be allowed and resolve to addresses the policy accepts
    (loopback and private addresses only when it says so). The card may name another URL
    for the calls: the policy judges that one too.

    Attributes:
        url: the peer's base URL; its card is read from `card_path` under it.
        card_path: where the Agent Card is, under `url`.
        headers: headers sent with every request; ``{credential}`` in a value takes the
            credential's value (``{"Authorization": "Bearer {credential}"}``).
        credential: the name of the secret the peer is called with, resolved through the
            runtime's `SecretResolver` for each run's scope: ``{tenant}`` in it takes the
            scope's tenant (``"PEER_TOKEN_{tenant}"``). None for no credential.
        timeout: seconds to wait to connect and read the card, and for each request to be
            written (reads of an event stream wait up to 300 s: a peer may work a while in
            silence; a call as a whole is bounded by `A2APeer.timeout`).
        card_ttl: seconds a card read is used before it is read again.
        streaming: follow a task by its event stream when the card says the peer streams;
            False (or a peer that does not stream): send the message, then ask for the
            task every `poll_interval` seconds until it ends.
        poll_interval: seconds between two readings of a task being polled.
    """

    url: str
    card_path: str = CARD_PATH
    headers: Mapping[str, str] = field(default_factory=dict)
    credential: str | None = None
    timeout: float = 30.0
    card_ttl: float = 300.0
    streaming: bool = True
    poll_interval: float = 1.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"A2AHttp url must be http:// or https://, not {self.url!r}")
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))
        for name in ("timeout", "poll_interval"):
            if not getattr(self, name) > 0:
                raise ValueError(f"A2AHttp {name} must be positive, not {getattr(self, name)!r}")
        if self.card_ttl < 0:
            raise ValueError(f"A2AHttp card_ttl must not be negative, not {self.card_ttl!r}")
        check_templates("headers", self.headers, self.credential)
        check_secret_name("credential", self.credential)


A2AConnection = A2AHttp
"""How to reach one A2A peer."""


def credential_name(connection: A2AConnection, scope: Scope) -> str | None:
    """The name of the secret `connection` uses for runs of `scope`, or None."""
    return secret_for(connection.credential, scope)
