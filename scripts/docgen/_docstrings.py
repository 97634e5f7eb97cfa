"""Google-style docstrings, parsed by griffe, as Markdown."""

from __future__ import annotations

import textwrap

import griffe


def docstring_markdown(obj: griffe.Object) -> list[str]:
    """The object's docstring as Markdown lines (empty when it has none)."""
    if obj.docstring is None:
        return []
    lines: list[str] = []
    for section in obj.docstring.parsed:
        lines += _section(section)
        lines.append("")
    while lines and not lines[-1]:
        lines.pop()
    return lines


def first_paragraph(obj: griffe.Object) -> str:
    """The docstring's first paragraph on one line, for summaries."""
    if obj.docstring is None:
        return ""
    return " ".join(obj.docstring.value.strip().split("\n\n", 1)[0].split())


def _section(section: griffe.DocstringSection) -> list[str]:
    kind = section.kind
    if kind is griffe.DocstringSectionKind.text:
        return str(section.value).strip("\n").splitlines()
    if kind in _NAMED_LISTS:
        items: list[griffe.DocstringNamedElement] = section.value
        lines = [f"**{_NAMED_LISTS[kind]}:**", ""]
        for item in items:
            lines += _bullet(f"`{item.name}`", item.description)
        return lines
    if kind in _TYPED_LISTS:
        typed: list[griffe.DocstringElement] = section.value
        lines = [f"**{_TYPED_LISTS[kind]}:**", ""]
        for element in typed:
            label = f"`{element.annotation}`" if element.annotation else ""
            lines += _bullet(label, element.description)
        return lines
    if kind is griffe.DocstringSectionKind.examples:
        lines = ["**Examples:**", ""]
        for part, text in section.value:
            if part is griffe.DocstringSectionKind.examples:
                lines += ["```pycon", *text.splitlines(), "```", ""]
            else:
                lines += [*text.splitlines(), ""]
        return lines
    if kind is griffe.DocstringSectionKind.admonition:
        admonition: griffe.DocstringAdmonition = section.value
        title = (section.title or str(admonition.annotation or "Note")).strip()
        body = admonition.description.strip().splitlines()
        return [f"**{title.capitalize()}:** {body[0] if body else ''}", *body[1:]]
    return [f"**{kind.value.capitalize()}:**", "", *str(section.value).splitlines()]


def _bullet(label: str, description: str) -> list[str]:
    text = textwrap.dedent(description).strip().splitlines() or [""]
    head = f"- {label}: {text[0]}" if label else f"- {text[0]}"
    return [head, *(f"  {line}" if line else "" for line in text[1:])]


_NAMED_LISTS = {
    griffe.DocstringSectionKind.parameters: "Arguments",
    griffe.DocstringSectionKind.other_parameters: "Other arguments",
    griffe.DocstringSectionKind.type_parameters: "Type parameters",
    griffe.DocstringSectionKind.attributes: "Attributes",
    griffe.DocstringSectionKind.functions: "Functions",
    griffe.DocstringSectionKind.classes: "Classes",
    griffe.DocstringSectionKind.type_aliases: "Type aliases",
    griffe.DocstringSectionKind.modules: "Modules",
}
_TYPED_LISTS = {
    griffe.DocstringSectionKind.returns: "Returns",
    griffe.DocstringSectionKind.yields: "Yields",
    griffe.DocstringSectionKind.receives: "Receives",
    griffe.DocstringSectionKind.raises: "Raises",
    griffe.DocstringSectionKind.warns: "Warns",
}
