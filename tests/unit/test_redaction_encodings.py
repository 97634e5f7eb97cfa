"""No encoded form of a known secret survives redaction: properties over arbitrary secrets and
the arbitrary text around them, and the forms people meet (a Basic credential, an httpx
header error)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from urllib.parse import quote, quote_plus, unquote, unquote_plus

from hypothesis import example, given, settings
from hypothesis import strategies as st

from psych_runtime import EnvSecretResolver
from psych_runtime.model.egress import Redactor, redaction_mark
from psych_runtime.model.egress._redact import MIN_SECRET_LENGTH

MARK = redaction_mark("S")

printable = st.characters(exclude_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))
secrets = st.text(printable, min_size=MIN_SECRET_LENGTH, max_size=24)
texts = st.text(printable, max_size=24)


def lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


def b64(encode: Callable[[bytes], bytes], padded: bool) -> Callable[[str], str]:
    def encoded(text: str) -> str:
        out = encode(text.encode()).decode()
        return out if padded else out.rstrip("=")

    return encoded


PER_CHARACTER: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "json": lambda s: json.dumps(s)[1:-1],
    "json, utf-8": lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    "bytes literal": lambda s: repr(s.encode())[2:-1],
    "quote": quote,
    "quote, safe=''": lambda s: quote(s, safe=""),
    "quote_plus": quote_plus,
    "quote, lower hex": lambda s: lower_hex(quote(s)),
    "quote, safe='', lower hex": lambda s: lower_hex(quote(s, safe="")),
    "quote_plus, lower hex": lambda s: lower_hex(quote_plus(s)),
}
"""Encodings that encode a text character by character (the quote a bytes literal uses
aside): the encoded secret inside an encoded longer text is the encoded secret alone."""

BASE64: dict[str, Callable[[str], str]] = {
    "base64": b64(base64.b64encode, padded=True),
    "base64, unpadded": b64(base64.b64encode, padded=False),
    "base64url": b64(base64.urlsafe_b64encode, padded=True),
    "base64url, unpadded": b64(base64.urlsafe_b64encode, padded=False),
}

ENCODINGS = PER_CHARACTER | BASE64


def spellings(secret: str) -> set[str]:
    """The secret in every encoding above (both quotes of a bytes literal): none may survive."""
    return {encode(secret) for encode in ENCODINGS.values()} | {repr(secret.encode() + b'"')[2:-2]}


def redact(secret: str, text: str) -> str:
    redacted = Redactor(EnvSecretResolver(["S"], environ={"S": secret})).text(text)
    # A secret that spells part of the mark ("dact", "ted:") is found in the mark itself,
    # which carries nothing of it: the check looks at what is not a mark.
    return redacted.replace(MARK, "\x00")


@settings(max_examples=200, deadline=None)
@given(secret=secrets, before=texts, after=texts, encoding=st.sampled_from(sorted(ENCODINGS)))
@example(secret='pa"ss/w\\\u00f6rd+1 2', before="x", after="y", encoding="json")
@example(secret="sk-live:\u00e9'\"", before="", after="", encoding="bytes literal")
def test_no_spelling_of_a_secret_survives_in_any_text(
    secret: str, before: str, after: str, encoding: str
) -> None:
    redacted = redact(secret, before + ENCODINGS[encoding](secret) + after)
    for spelling in spellings(secret):
        assert spelling not in redacted


@settings(max_examples=200, deadline=None)
@given(
    secret=secrets,
    before=texts,
    after=texts,
    encoding=st.sampled_from(sorted(PER_CHARACTER)),
)
def test_a_secret_inside_a_longer_encoded_text_is_redacted(
    secret: str, before: str, after: str, encoding: str
) -> None:
    redacted = redact(secret, PER_CHARACTER[encoding](before + secret + after))
    for spelling in spellings(secret):
        assert spelling not in redacted
    if encoding.startswith("quote"):
        for piece in redacted.split("\x00"):
            assert secret not in (unquote_plus if "plus" in encoding else unquote)(piece)


@settings(max_examples=200, deadline=None)
@given(
    secret=secrets,
    before=st.binary(max_size=12),
    after=st.binary(max_size=12),
    encoding=st.sampled_from(sorted(BASE64)),
)
@example(secret="secret", before=b"user:", after=b"", encoding="base64")  # Basic user:secret
@example(secret="secret", before=b"u:", after=b"", encoding="base64")
@example(secret="secret", before=b"", after=b"\x00", encoding="base64url, unpadded")
def test_a_secret_inside_a_longer_base64_text_is_redacted_at_every_alignment(
    secret: str, before: bytes, after: bytes, encoding: str
) -> None:
    encode = base64.urlsafe_b64encode if encoding.startswith("base64url") else base64.b64encode
    whole = encode(before + secret.encode() + after).decode()
    if "unpadded" in encoding:
        whole = whole.rstrip("=")
    redacted = redact(secret, f"Authorization: Basic {whole}")
    # What is left decodes, at any of the four character offsets, to nothing holding the
    # secret: at most a few bits of it remain at each side of the mark.
    for piece in redacted.split("\x00"):
        for offset in range(4):
            run = piece[offset:]
            run = run[: len(run) - len(run) % 4]
            decoded = decode_leniently(run)
            assert secret.encode() not in decoded


def decode_leniently(text: str) -> bytes:
    out = b""
    for encoded in (text, text.replace("-", "+").replace("_", "/")):
        cleaned = re.sub(r"[^A-Za-z0-9+/]", "A", encoded)
        try:
            out += base64.b64decode(cleaned + "=" * (-len(cleaned) % 4)) + b"|"
        except binascii.Error:
            continue
    return out


def test_the_forms_people_meet() -> None:
    secret = "hunter2-corr\u00e9ct/horse"
    data = secret.encode()
    basic = base64.b64encode(b"alice:" + data).decode()
    redactor = Redactor(EnvSecretResolver(["S"], environ={"S": secret}))
    assert basic.startswith("YWxpY2U6") and len(basic) == 40
    assert redactor.text(f"Authorization: Basic {basic}") == f"Authorization: Basic YWxpY2U6{MARK}"
    # Unaligned, the characters that also encode a neighbour (or the padding) stay.
    short = base64.b64encode(b"bob:" + data).decode()
    assert redactor.text(short) == f"Ym9iOm{MARK}U="
    # What httpx (h11) raises for a header value it refuses: the repr of its bytes.
    refused = f"Illegal header value {b'Bearer ' + data + b'\n'!r}"
    assert refused == "Illegal header value b'Bearer hunter2-corr\\xc3\\xa9ct/horse\\n'"
    assert redactor.text(refused) == f"Illegal header value b'Bearer {MARK}\\n'"
    for query in (quote(secret, safe=""), quote_plus(secret), lower_hex(quote(secret))):
        assert redactor.text(f"GET /cb?token={query}&x=1") == f"GET /cb?token={MARK}&x=1"
    assert redactor.text(json.dumps({"auth": secret})) == f'{{"auth": "{MARK}"}}'
    assert redactor.text(data.hex()) == MARK


def test_a_value_shorter_than_the_minimum_is_not_redacted_in_any_form() -> None:
    short = "a/é"
    assert len(short) < MIN_SECRET_LENGTH
    redactor = Redactor(EnvSecretResolver(["S"], environ={"S": short}))
    text = " ".join(encode(short) for encode in ENCODINGS.values())
    assert redactor.text(text) == text
