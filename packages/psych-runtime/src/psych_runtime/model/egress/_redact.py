"""Redaction: known secret values never reach a log, an error or a tool result."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, JsonValue

from psych_core import (
    ModelCallFailed,
    RunFailed,
    SecretResolver,
    ToolCallFailed,
    ToolCallFinished,
)

MIN_SECRET_LENGTH = 4
"""Values shorter than this are not redacted: they would match everywhere, and hide nothing."""


def redaction_mark(name: str) -> str:
    """What stands in a text where the value of secret `name` was."""
    return f"[redacted:{name}]"


class Redactor:
    """Replaces the values a `SecretResolver` knows with ``[redacted:NAME]``.

    It asks the resolver for its known values each time it redacts, so a secret resolved after
    the redactor was made is redacted too. Longer values are replaced first, so a secret that
    contains another is replaced whole.
    """

    def __init__(self, secrets: SecretResolver | None = None) -> None:
        self._secrets = secrets
        self._compiled: tuple[frozenset[tuple[str, str]], re.Pattern[str] | None] = (
            frozenset(),
            None,
        )
        self._names: dict[str, str] = {}

    def text(self, text: str) -> str:
        """`text` with every known secret value replaced by its mark."""
        pattern = self._pattern()
        if pattern is None:
            return text
        return pattern.sub(lambda match: redaction_mark(self._names[match.group(0)]), text)

    def json(self, value: JsonValue) -> JsonValue:
        """A JSON value with secrets redacted from every string in it, keys included."""
        if self._pattern() is None:
            return value
        return self._json(value)

    def body[B: BaseModel](self, body: B) -> B:
        """A record body with secrets redacted from what tools and errors put in it.

        Covers a tool call's result (recursively) and error, and the error texts of
        `ModelCallFailed` and `RunFailed`; other bodies are returned unchanged.
        """
        if self._pattern() is None:
            return body
        match body:
            case ToolCallFinished():
                return body.model_copy(update={"result": self._json(body.result)})
            case ToolCallFailed():
                return body.model_copy(update={"error": self.text(body.error)})
            case ModelCallFailed():
                return body.model_copy(update={"error": self.text(body.error)})
            case RunFailed():
                return body.model_copy(update={"error": self.text(body.error)})
            case _:
                return body

    def _json(self, value: JsonValue) -> JsonValue:
        match value:
            case str():
                return self.text(value)
            case bool() | None:
                return value
            case int() | float():
                # A number that spells a secret (a numeric PIN, an account number) goes too.
                spelled = str(value)
                redacted = self.text(spelled)
                return value if redacted == spelled else redacted
            case list():
                return [self._json(item) for item in value]
            case dict():
                return {self.text(key): self._json(item) for key, item in value.items()}

    def _pattern(self) -> re.Pattern[str] | None:
        known: Mapping[str, str] = self._secrets.known() if self._secrets is not None else {}
        items = frozenset(
            (name, secret) for name, secret in known.items() if len(secret) >= MIN_SECRET_LENGTH
        )
        cached_items, cached = self._compiled
        if items == cached_items:
            return cached
        self._names = {}
        for name, secret in sorted(items):
            self._names.setdefault(secret, name)
        ordered = sorted(self._names, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(secret) for secret in ordered)) if ordered else None
        self._compiled = (items, pattern)
        return pattern
