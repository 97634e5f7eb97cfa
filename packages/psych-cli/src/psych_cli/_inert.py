"""Making a string from a run's log inert before it reaches a terminal.

A log holds what models, tools and stores wrote, and any of them may be hostile: an ESC
sequence sets the terminal's title, writes its clipboard (OSC 52), clears the screen, plants
a hyperlink or sends a device-control string; C1 controls (U+0080 to U+009F) are the same
sequences in one character to terminals that honour them; bidirectional controls make text
read other than it is stored; and one line of ten megabytes floods the screen. `inert` turns
each such character into a visible escape (``\\x1b``, ``\\u202e``) that says which it was, and
cuts a long string with a marker that says how much was cut.
"""

from __future__ import annotations

import re
import unicodedata

LIMIT = 2000
"""The most characters of one log string shown on a terminal; the rest is counted, not shown."""

# Cc: C0, DEL and C1 controls. Cf: format characters, which are invisible and include the
# bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), the Unicode
# tag characters that smuggle text past a reader, soft hyphens and byte-order marks.
# Cs: lone surrogates, which cannot even be encoded for output. Zl, Zp: line and paragraph
# separators, which some terminals treat as a new line.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Zero-width non-joiner and joiner: Persian, Indic scripts and emoji sequences need them, and
# they reorder and hide nothing.
_JOINERS = frozenset({"\u200c", "\u200d"})
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# Printable ASCII is always safe; only the other characters need their category looked up.
_MAYBE_UNSAFE = re.compile(r"[^\x20-\x7e]")
_MAYBE_UNSAFE_IN_LINES = re.compile(r"[^\x20-\x7e\n\t]")


def inert(text: str, *, limit: int = LIMIT, lines: bool = False) -> str:
    """`text` as a terminal may show it: it holds no character the terminal could obey.

    Every control character (C0, DEL, C1, so every ESC-introduced sequence loses its ESC),
    format character (bidirectional controls among them) and line separator is replaced by
    its escape as Python writes it (``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\U000e0041``), so
    the reader sees that it was there and which it was. Rich markup needs no escaping as
    long as the result goes into a ``rich.text.Text``, which never parses markup.

    Args:
        text: a string read from a log (or anything else a program did not write itself).
        limit: the most characters of `text` shown; a longer `text` is cut there and ends
            with ``… (N more characters)``.
        lines: keep newlines and tabs, for a text shown as several lines; otherwise they
            are escaped too, so the text stays on the one line it was given.
    """
    cut = len(text) - limit
    if cut > 0:
        text = text[:limit]
    pattern = _MAYBE_UNSAFE_IN_LINES if lines else _MAYBE_UNSAFE
    shown = pattern.sub(_escape, text)
    if cut > 0:
        shown += f" … ({cut:,} more characters)"
    return shown


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if char in _JOINERS or unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
