"""Strings a hostile model, tool or store could put in a log, and a check of raw terminal bytes.

The `psych` command must show each of them inert: `assert_inert` fails on any byte a terminal
would obey. Tests of the command feed `HOSTILE` through every field it prints.
"""

from __future__ import annotations

import re

PIECES = {
    "csi clear screen": "\x1b[2J\x1b[H",
    "csi colour": "\x1b[38;5;201m",
    "osc title": "\x1b]0;pwned title\x07",
    "osc 52 clipboard": "\x1b]52;c;cm0gLXJmIH4K\x07",
    "osc 8 hyperlink": "\x1b]8;;http://127.0.0.1/x\x1b\\click me\x1b]8;;\x1b\\",
    "dcs": "\x1bP1$qm\x1b\\",
    "c1 csi": "\x9b31m",
    "c1 osc": "\x9d0;c1 title\x9c",
    "c1 dcs": "\x90dcs\x9c",
    "c1 next line": "\x85",
    "nul": "\x00",
    "bell backspace cr del": "\x07\x08\r\x7f",
    "rlo": "\u202e",
    "bidi isolates": "\u2066\u2067\u2068\u2069",
    "bidi marks": "\u200e\u200f\u061c",
    "unicode tag": "\U000e0041",
    "line separator": "\u2028",
    "rich markup": "[red]not red[/red] [link=http://127.0.0.1/]link[/link] :warning:",
}
HOSTILE = "<<" + "|".join(PIECES.values()) + ">>"
"""Every piece in one string, between markers that show where it starts and ends."""

HUGE = "H" * 10_000_000
"""One line of ten million characters."""

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
"""Every bidirectional control: embeddings, overrides, isolates and marks."""
_OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\U000e0000-\U000e007f" + BIDI + "]")
_SGR = re.compile(rb"\x1b\[[0-9;]*m")


def assert_inert(raw: bytes, *, colour: bool = False, max_bytes: int | None = 256_000) -> None:
    """`raw` (what the command wrote) holds nothing a terminal would obey, and is not a flood.

    With `colour`, the SGR sequences rich writes for styles are allowed; the corpus's own SGR
    (256-colour 201) is not, and no other ESC is.
    """
    if max_bytes is not None:
        assert len(raw) <= max_bytes, f"{len(raw):,} bytes written"
    if colour:
        assert b"\x1b[38;5;201m" not in raw
        raw = _SGR.sub(b"", raw)
    assert b"\x1b" not in raw, _around(raw, raw.index(b"\x1b"))
    assert b"\x00" not in raw
    text = raw.decode("utf-8")
    found = _OBEYED.search(text)
    assert found is None, (
        f"{found.group()!r} in {text[max(0, found.start() - 60) : found.end() + 60]!r}"
    )


def assert_shows_every_piece(out: str) -> None:
    """The escapes stand where the pieces were: the reader sees what the log held."""
    for visible in (
        "\\x1b[2J",
        "\\x1b]52;c;cm0gLXJmIH4K\\x07",
        "\\x1bP1$qm",
        "\\x9b31m",
        "\\x00",
        "\\u202e",
        "\\U000e0041",
        "[red]not red[/red]",
        ":warning:",
    ):
        assert visible in out, visible


def _around(raw: bytes, at: int) -> str:
    return repr(raw[max(0, at - 60) : at + 60])
