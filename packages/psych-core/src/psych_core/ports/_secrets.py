"""The `SecretResolver` port: secret values by name, kept out of the log."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable


@runtime_checkable
class SecretResolver(Protocol):
    """Gives the value of a secret (an API key, a token) by its name.

    Specs and configuration name secrets (``"OPENAI_API_KEY"``); only the egress seam asks for
    their values, at the moment a request is sent, and no value is ever written to a run's log.

    Contract:
        - `resolve` returns the current value of the named secret, or None when the resolver
          has none (the caller raises `SecretNotFound` naming the secret). It may do IO (a
          vault, a file) and may be called once per outbound request, so implementations that
          are slow to reach should cache.
        - `known` returns every value the resolver has handed out or was configured with,
          keyed by name. The runtime redacts each of these values from tool results and error
          texts before they are recorded, so a value missing from `known` can leak into the
          log. It is called before each record is written: it must be cheap and must not block.
        - Neither method may log or print a value. ``repr`` must not show values either.
    """

    async def resolve(self, name: str) -> str | None:
        """The value of secret `name`, or None when this resolver has none."""
        ...

    def known(self) -> Mapping[str, str]:
        """Every secret value this resolver knows, by name, for redaction."""
        ...
