"""Credentials of tool sources (MCP servers, A2A peers): secrets named per tenant, and the one
placeholder that carries a secret's value into headers or a subprocess's environment.

A connection names a secret, never holds one: ``"GITHUB_TOKEN_{tenant}"`` is resolved through
the runtime's `SecretResolver` for each run's tenant, and ``{credential}`` in a header or
environment value takes what it resolves to.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping

from psych_core import Scope, SecretNotFound, SecretResolver

CREDENTIAL = "credential"
"""The placeholder that takes the credential's value in headers and environment values."""


def secret_for(template: str | None, scope: Scope) -> str | None:
    """The secret's name `template` gives for runs of `scope` (``{tenant}`` filled), or None."""
    if template is None:
        return None
    return template.replace("{tenant}", scope.tenant)


def filled(templates: Mapping[str, str], value: str | None) -> dict[str, str]:
    """`templates` with ``{credential}`` replaced by `value` (there is none when it is None)."""
    marker = "{" + CREDENTIAL + "}"
    return {key: text.replace(marker, value or "") for key, text in templates.items()}


def check_templates(what: str, templates: Mapping[str, str], credential: str | None) -> None:
    """Refuse placeholders other than ``{credential}``, and that one when no secret is named."""
    for key, text in templates.items():
        names = [name for _l, name, _s, _c in string.Formatter().parse(text) if name is not None]
        unknown = [name for name in names if name != CREDENTIAL]
        if unknown:
            raise ValueError(
                f"{what}[{key!r}]: only {{{CREDENTIAL}}} may be filled in, not "
                f"{', '.join('{' + n + '}' for n in unknown)}"
            )
        if names and credential is None:
            raise ValueError(f"{what}[{key!r}] uses {{{CREDENTIAL}}} but no credential is named")


def check_secret_name(what: str, template: str | None) -> None:
    """Refuse a secret's name that is empty or has a placeholder other than ``{tenant}``."""
    if template is None:
        return
    rest = template.replace("{tenant}", "")
    if not rest or "{" in rest or "}" in rest:
        raise ValueError(
            f"{what} {template!r} must be a secret's name, with {{tenant}} as the only placeholder"
        )


async def resolved(secrets: SecretResolver | None, name: str | None, owner: str) -> str | None:
    """The value of the secret `name` for `owner` (``"MCP server 'github'"``), or None when no
    secret is named; `SecretNotFound` when it has no value or there is no resolver."""
    if name is None:
        return None
    if secrets is None:
        raise SecretNotFound(
            name, owner, "the runtime has no SecretResolver: pass secrets=... to Runtime"
        )
    value = await secrets.resolve(name)
    if value is None:
        raise SecretNotFound(name, repr(secrets))
    return value


def digest(*values: str | None) -> str | None:
    """A digest of the credential values a pooled connection was made with (None for none):
    part of its key, so a changed secret never reuses a connection made with the old one."""
    present = [value for value in values if value is not None]
    return hashlib.sha256("\0".join(present).encode()).hexdigest() if present else None
