"""Templates in tool declarations: ``{name}`` placeholders, and the URLs of http tools.

A placeholder is a parameter name in braces; ``{{`` and ``}}`` stand for literal braces. Format
specs, conversions, attribute and index lookups are refused: a template only ever substitutes
a whole value, which the runtime encodes for where it goes (a path segment, a query value, an
argument of a program).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_URL = re.compile(
    r"^(?P<scheme>https?)://(?P<authority>[^/?#@{}\s]+)(?P<path>/[^?#\s]*)?"
    r"(?:\?(?P<query>[^#\s]*))?$"
)


def placeholders(template: str, what: str) -> tuple[str, ...]:
    """The names of `template`'s placeholders, in order, each once.

    Raises `ValueError` naming `what` (``"url"``, ``"argv[1]"``, ...) when the template is
    malformed or a placeholder is not a plain name.
    """
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"{what} {template!r}: {exc}; write literal braces as '{{{{' and '}}}}'"
        ) from None
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if not _NAME.match(field) or spec or conversion:
            shown = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(
                f"{what} {template!r}: placeholder {{{shown}}} must be a plain parameter name "
                "such as {order_id}"
            )
        if field not in names:
            names.append(field)
    return tuple(names)


@dataclass(frozen=True, slots=True)
class UrlTemplate:
    """An http tool's URL template, split where placeholders may and may not go.

    Attributes:
        origin: ``scheme://host[:port]``, with no placeholder: the tool can reach only it.
        path: the path template (``/orders/{order_id}``), or ``""``.
        query: ``(name, value template)`` pairs of the query, in order.
        path_names: placeholders of the path.
        query_names: placeholders of the query values.
    """

    origin: str
    path: str
    query: tuple[tuple[str, str], ...]
    path_names: tuple[str, ...]
    query_names: tuple[str, ...]

    @classmethod
    def parse(cls, url: str) -> UrlTemplate:
        """Split `url`; `ValueError` says what is wrong with it."""
        match = _URL.match(url)
        if match is None:
            raise ValueError(
                f"url {url!r} must be http(s)://host[:port]/path?query with placeholders "
                "only in the path and the query values (no credentials, no fragment, no "
                "placeholder in the host: a tool reaches one declared host)"
            )
        path = match.group("path") or ""
        path_names = placeholders(path, "url path")
        query: list[tuple[str, str]] = []
        query_names: list[str] = []
        for pair in filter(None, (match.group("query") or "").split("&")):
            name, _, value = pair.partition("=")
            if "{" in name or "}" in name:
                raise ValueError(f"url {url!r}: query names cannot hold placeholders ({name!r})")
            for placeholder in placeholders(value, f"url query value of {name!r}"):
                if placeholder not in query_names:
                    query_names.append(placeholder)
            query.append((name, value))
        return cls(
            origin=f"{match.group('scheme')}://{match.group('authority')}",
            path=path,
            query=tuple(query),
            path_names=path_names,
            query_names=tuple(query_names),
        )

    @property
    def host(self) -> str:
        """The host the tool may reach (no port, no brackets)."""
        authority = self.origin.split("://", 1)[1]
        if authority.startswith("["):
            return authority[1:].split("]", 1)[0]
        return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority

    @property
    def names(self) -> tuple[str, ...]:
        """Every placeholder of the URL, path first."""
        return self.path_names + tuple(n for n in self.query_names if n not in self.path_names)
