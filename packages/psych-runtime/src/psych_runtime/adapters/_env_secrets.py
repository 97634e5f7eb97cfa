"""`EnvSecretResolver`: secrets from environment variables."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping


class EnvSecretResolver:
    """A `SecretResolver` that reads environment variables, the secret's name being the
    variable's name.

    ``EnvSecretResolver(["OPENAI_API_KEY", "STRIPE_KEY"])`` serves only those variables, and
    knows their values from the start, so the runtime redacts them from tool results and
    errors even when no request ever asked for them. Without `names` it serves any variable,
    and knows (and so redacts) those it has served.

    Args:
        names: the variables it may serve; None for any.
        environ: where to read them; `os.environ` (read at each call) when omitted.
    """

    def __init__(
        self, names: Iterable[str] | None = None, *, environ: Mapping[str, str] | None = None
    ) -> None:
        self._names = tuple(names) if names is not None else None
        self._environ = environ
        self._served: dict[str, str] = {}

    @property
    def names(self) -> tuple[str, ...] | None:
        """The variables this resolver serves, or None for any."""
        return self._names

    async def resolve(self, name: str) -> str | None:
        """The value of variable `name`; None when it is unset, empty or not served."""
        if self._names is not None and name not in self._names:
            return None
        value = self._env().get(name)
        if not value:
            return None
        self._served[name] = value
        return value

    def known(self) -> Mapping[str, str]:
        """The values of the named variables that are set, and of every variable served."""
        known = dict(self._served)
        if self._names is not None:
            env = self._env()
            known.update({name: env[name] for name in self._names if env.get(name)})
        return known

    def _env(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    def __repr__(self) -> str:
        # Names only: a repr ends up in error messages and logs.
        if self._names is None:
            return "EnvSecretResolver()"
        return f"EnvSecretResolver(names={self._names!r})"
