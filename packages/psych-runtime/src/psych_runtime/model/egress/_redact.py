"""Redaction: known secret values never reach a log, an error or a tool result.

`Redactor.body` is the one place a record body is redacted: every record a runtime writes
passes through it (an attempt's stage, for every body it folds and commits; admission, for a
run's `RunAdmitted` and a subagent's child run). It walks the body's fields generically (every
string, JSON key and JSON number, recursively), so a new record type is covered without a list
to keep up to date.

A secret is looked for raw and in the encodings that carry it into a text unnoticed: JSON
string escapes, the ``repr`` of its bytes or text (what an HTTP client's header error prints),
percent-encoding (``quote`` and ``quote_plus``, upper and lower hex), hex, and base64, standard
and URL-safe, padded or not, alone or inside a longer base64 text (``Basic
base64(user:secret)``) at any of its three alignments.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import re
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Literal
from urllib.parse import quote, quote_plus

from pydantic import BaseModel, JsonValue

from psych_core import SecretResolver

MIN_SECRET_LENGTH = 4
"""Values shorter than this are not redacted: they would match everywhere, and hide nothing."""

_URL_SAFE_SETS = ("", "/", "!*'()", "!$&'()*+,;=:@/")
"""The characters percent-encoders commonly leave alone besides letters, digits and ``_.-~``:
nothing (a query value), ``/`` (`quote`'s default, a path), JavaScript's
``encodeURIComponent``, and RFC 3986's path characters."""


def redaction_mark(name: str) -> str:
    """What stands in a text where the value of secret `name` was."""
    return f"[redacted:{name}]"


def encoded_forms(secret: str) -> frozenset[str]:
    """Every text in which `secret` is looked for: the value itself and its encodings.

    A base64 form inside a longer base64 text is the run of characters that encode the
    secret's bytes alone; the one or two characters at each end that also encode the
    neighbouring bytes stay, and tell nothing of the secret.
    """
    data = secret.encode("utf-8", "surrogatepass")
    forms = {secret, data.hex(), data.hex().upper(), *_escaped(secret, data)}
    forms.update(_percent_encoded(secret))
    for encoded in _base64_forms(data):
        forms.add(encoded)
        forms.add(encoded.replace("/", "\\/"))  # JSON may escape "/"
        forms.update(_percent_encoded(encoded))  # base64 in a URL or a form body
    # Any of them inside JSON text (a tool call's arguments, a JSON document in a string).
    forms.update(escaped for form in tuple(forms) for escaped in _json_escaped(form))
    forms.discard("")
    return frozenset(forms)


def _escaped(secret: str, data: bytes) -> Iterator[str]:
    # Python picks the quote of a repr from the whole text: a `'` is escaped only when the
    # text also holds a `"`, so both spellings are looked for (the `+ '"'` forces the escape).
    yield repr(data)[2:-1]
    yield repr(data + b'"')[2:-2]
    yield repr(secret)[1:-1]
    yield repr(secret + '"')[1:-2]
    yield ascii(secret)[1:-1]
    yield ascii(secret + '"')[1:-2]
    for escaped in _json_escaped(secret):
        yield escaped
        yield escaped.replace("/", "\\/")  # JSON may escape "/"
        yield re.sub(r"\\u[0-9a-f]{4}", lambda m: "\\u" + m.group(0)[2:].upper(), escaped)


def _json_escaped(text: str) -> tuple[str, str]:
    return json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]


def _percent_encoded(text: str) -> Iterator[str]:
    for safe in _URL_SAFE_SETS:
        for encode in (quote, quote_plus):
            encoded = encode(text, safe=safe)
            yield encoded
            yield re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)


def _base64_forms(data: bytes) -> Iterator[str]:
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode("ascii")
        yield whole
        yield whole.rstrip("=")
        for offset in range(3):
            # The secret's bits start at bit 8 * offset of the shifted text; keep only the
            # characters (6 bits each) made of its bits alone.
            shifted = encode(bytes(offset) + data).decode("ascii")
            first = (8 * offset + 5) // 6
            last = 8 * (offset + len(data)) // 6
            yield shifted[first:last]


class Redactor:
    """Replaces the values a `SecretResolver` knows, and their encodings, with
    ``[redacted:NAME]``.

    It asks the resolver for its known values each time it redacts, so a secret resolved after
    the redactor was made is redacted too. Longer forms are replaced first, so a secret that
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
        """`text` with every known secret value, in any encoding looked for, replaced by its
        mark; `text` itself when it holds none."""
        pattern = self._pattern()
        if pattern is None or pattern.search(text) is None:
            return text
        return pattern.sub(lambda match: redaction_mark(self._names[match.group(0)]), text)

    def settled(self, text: str, start: int = 0) -> int:
        """How much of `text`, a text still growing at its end, `text` can redact for good.

        The index returned is where no secret (in any form looked for) that more text could
        complete or lengthen begins before it, and no secret found spans it, so
        ``text(t[:i]) + text(t[i:j])`` is what `text` makes of ``t[:j]``. For live text,
        redacted before it is sent. `start`: an answer given for a shorter text, where the
        search begins.
        """
        pattern = self._pattern()
        if pattern is None:
            return len(text)
        longest = max(map(len, self._names))
        cut = max(start, len(text) - (longest - 1))
        for match in pattern.finditer(text, start):
            if match.start() >= cut:
                break
            if match.end() > cut:
                return match.start()  # it may yet grow into a longer form: hold it back whole
        return cut

    def json(self, value: JsonValue) -> JsonValue:
        """A JSON value with secrets redacted from every string in it, keys included, and
        from every number (a number that spells a secret becomes its mark)."""
        if self._pattern() is None:
            return value
        redacted: JsonValue = self._value(value, takes_text=True)
        return redacted

    def body[B: BaseModel](self, body: B) -> B:
        """A record body (of any type) with secrets redacted from everything it holds.

        Every string field, every string in a tuple and every JSON value (a tool's result, a
        resume's payload, edited arguments: strings, keys and numbers, recursively) is
        redacted; nested models (a tool call, a signal) likewise. What cannot hold text is
        kept: the type tag and other fixed choices, counts, times, flags. The body comes back
        as the same object when it holds no secret, and untouched, without a walk, when no
        secret is known.
        """
        if self._pattern() is None:
            return body
        return self._model(body)

    def _model[M: BaseModel](self, model: M) -> M:
        updates: dict[str, Any] = {}
        for name, takes_text in _text_fields(type(model)).items():
            value = getattr(model, name)
            redacted = self._value(value, takes_text)
            if redacted is not value:
                updates[name] = redacted
        # model_copy: the redacted values fit the fields as the originals did, so nothing
        # needs validating again.
        return model.model_copy(update=updates) if updates else model

    def _value(self, value: Any, takes_text: bool) -> Any:
        """`value` redacted; the same object when nothing in it changed. `takes_text`: any
        string fits where it is (a string field, a JSON value), so a number spelling a secret
        may become its mark there."""
        match value:
            case BaseModel():
                return self._model(value)
            case bool() | None:
                return value
            case str() if takes_text:
                return self._string(value)
            case int() | float() if takes_text:
                # A number that spells a secret (a numeric PIN, an account number) goes too.
                spelled = str(value)
                redacted = self.text(spelled)
                return value if redacted is spelled else redacted
            case dict():
                pairs = [
                    (self.text(key) if isinstance(key, str) else key, self._value(item, takes_text))
                    for key, item in value.items()
                ]
                unchanged = all(
                    key is old_key and item is old_item
                    for (key, item), (old_key, old_item) in zip(pairs, value.items(), strict=True)
                )
                return value if unchanged else dict(pairs)
            case list() | tuple():
                items = [self._value(item, takes_text) for item in value]
                unchanged = all(new is old for new, old in zip(items, value, strict=True))
                return value if unchanged else type(value)(items)
            case _ if dataclasses.is_dataclass(value) and not isinstance(value, type):
                # A message a continuation carries (`RunAdmitted.history`).
                changes = {
                    name: redacted
                    for name, fits in _dataclass_text_fields(type(value)).items()
                    if (redacted := self._value(old := getattr(value, name), fits)) is not old
                }
                return dataclasses.replace(value, **changes) if changes else value
            case _:
                # A fixed choice (a `Literal`), a count, a time, an amount: not text.
                return value

    def _string(self, value: str) -> str:
        redacted = self.text(value)
        if redacted is value or not value.lstrip().startswith(("{", "[")):
            return redacted
        try:
            parsed = json.loads(value)
        except ValueError:
            return redacted
        # JSON text (a tool call's arguments, a structured answer) is redacted value by value,
        # so it stays JSON: a number spelling a secret becomes a quoted mark.
        return self.text(json.dumps(self._value(parsed, takes_text=True), ensure_ascii=False))

    def _pattern(self) -> re.Pattern[str] | None:
        if self._secrets is None:
            return None  # no secrets: asked of every body, so answered at once
        known: Mapping[str, str] = self._secrets.known()
        items = frozenset(
            (name, secret) for name, secret in known.items() if len(secret) >= MIN_SECRET_LENGTH
        )
        cached_items, cached = self._compiled
        if items == cached_items:
            return cached
        names: dict[str, str] = {}
        for name, secret in sorted(items):
            for form in encoded_forms(secret):
                names.setdefault(form, name)
        ordered = sorted(names, key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._names = names
        self._compiled = (items, pattern)
        return pattern


@functools.cache
def _text_fields(model: type[BaseModel]) -> dict[str, bool]:
    """Each field of `model`, and whether any string fits where its value is (so a redacted
    string, or a number turned into a mark, still fits)."""
    return {name: _takes_text(field.annotation) for name, field in model.model_fields.items()}


@functools.cache
def _dataclass_text_fields(kind: type) -> dict[str, bool]:
    """Each field of the dataclass `kind`, and whether any string fits where its value is."""
    hints = typing.get_type_hints(kind)
    return {field.name: _takes_text(hints[field.name]) for field in dataclasses.fields(kind)}


def _takes_text(annotation: object) -> bool:
    if annotation in (str, dict, list, Any) or annotation is JsonValue:
        return True
    origin = typing.get_origin(annotation)
    arguments = [arg for arg in typing.get_args(annotation) if arg is not ...]
    if origin is Literal:
        return False
    if origin is typing.Annotated:
        return _takes_text(arguments[0])
    if origin in (dict, Mapping):
        return _takes_text(arguments[1]) if len(arguments) == 2 else True
    if origin in (typing.Union, types.UnionType, tuple, list, set, frozenset):
        return any(_takes_text(arg) for arg in arguments)
    return False
