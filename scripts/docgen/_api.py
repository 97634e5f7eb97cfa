"""The API reference: every public name of Psych Runtime, room by room, with its signature and
docstring.

The public surface is eight rooms, each a module with its own ``__all__``: ``psych_runtime``
(what an app uses), ``psych_runtime.records``, ``psych_runtime.ports``, ``psych_runtime.errors``,
``psych_runtime.workflows``, ``psych_runtime.mcp``, ``psych_runtime.a2a`` and
``psych_runtime.conversations``. The page has one section per room, and in it the
comment-headed groups of that room's ``__all__``.

The names are read with griffe from the source (not imported), so attribute docstrings (type
aliases, constants, dataclass fields) are found too, and a run of the generator never depends
on what happens to be installed.
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import griffe

from ._docstrings import docstring_markdown

RUNTIME_SRC = Path("packages/psych-runtime/src/psych_runtime")
RUNTIME_INIT = RUNTIME_SRC / "__init__.py"
_LINE = 96  # a signature longer than this is written one parameter per line


@dataclass(frozen=True, slots=True)
class Room:
    """One public module of ``psych_runtime``, and the source file of its ``__all__``."""

    module: str
    source: Path

    @property
    def prefix(self) -> str:
        """How the page names its exports: ``ports.`` for ``ports.Batch``, nothing at the top."""
        _, _, short = self.module.partition(".")
        return f"{short}." if short else ""

    @property
    def anchor(self) -> str:
        return "room-" + self.module.replace(".", "-")


ROOMS = (
    Room("psych_runtime", RUNTIME_INIT),
    Room("psych_runtime.records", RUNTIME_SRC / "records.py"),
    Room("psych_runtime.ports", RUNTIME_SRC / "ports.py"),
    Room("psych_runtime.errors", RUNTIME_SRC / "errors.py"),
    Room("psych_runtime.workflows", RUNTIME_SRC / "workflows.py"),
    Room("psych_runtime.mcp", RUNTIME_SRC / "mcp.py"),
    Room("psych_runtime.a2a", RUNTIME_SRC / "a2a.py"),
    Room("psych_runtime.conversations", RUNTIME_SRC / "conversations.py"),
)
"""The rooms, in the order the page shows them."""


@dataclass(frozen=True, slots=True)
class Group:
    """One comment-headed group of a room's ``__all__``."""

    title: str
    names: tuple[str, ...]
    room: Room = ROOMS[0]

    @property
    def anchor(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")
        return slug if self.room is ROOMS[0] else f"{self.room.prefix[:-1]}-{slug}"


def export_groups(init_source: str, room: Room = ROOMS[0]) -> list[Group]:
    """The groups of ``__all__``, in order: each ``# comment`` line starts one."""
    tree = ast.parse(init_source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            lines = init_source.splitlines()[node.lineno - 1 : node.end_lineno]
            break
    else:
        raise ValueError(f"{room.source}: no __all__ = [...]")
    groups: list[tuple[str, list[str]]] = [("Other names", [])]
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            title = stripped.lstrip("#").strip()
            groups.append((title[:1].upper() + title[1:], []))
        groups[-1][1].extend(re.findall(r"""["'](\w+)["']""", stripped.split("#")[0]))
    return [Group(title, tuple(names), room) for title, names in groups if names]


def room_groups(root: Path) -> list[Group]:
    """Every room's groups, room by room."""
    return [
        group
        for room in ROOMS
        for group in export_groups((root / room.source).read_text(encoding="utf-8"), room)
    ]


def public_names(root: Path) -> dict[str, str]:
    """Each exported name and how the page names it (``Worker``, ``ports.Batch``)."""
    return {name: group.room.prefix + name for group in room_groups(root) for name in group.names}


def load_runtime(root: Path) -> griffe.Module:
    """``psych_runtime`` as griffe reads it from ``root/packages/*/src``, aliases resolved."""
    logging.getLogger("griffe").setLevel(logging.ERROR)
    search = [str(path) for path in sorted((root / "packages").glob("*/src"))]
    loader = griffe.GriffeLoader(search_paths=search, docstring_parser=griffe.Parser.google)
    module = loader.load("psych_runtime")
    assert isinstance(module, griffe.Module)
    loader.resolve_aliases(external=True, implicit=False)
    where = Path(str(module.filepath)).resolve()
    if not where.is_relative_to(root.resolve()):
        raise RuntimeError(f"psych_runtime was read from {where}, outside {root}")
    return module


def api_page(root: Path, intro: str, guides: Mapping[str, list[str]]) -> str:
    """The whole ``docs/api.md``: the intro (with its worked example), a contents list, then
    every room and in it every export by group. `guides` maps a name to the skills that
    cover it."""
    groups = room_groups(root)
    package = load_runtime(root)
    modules = {room.module: _room_module(package, room) for room in ROOMS}
    lines = [intro.rstrip("\n"), "", "## Contents", ""]
    for room in ROOMS:
        summary = _first_sentence(modules[room.module])
        lines.append(f"- [`{room.module}`](#{room.anchor}): {summary}")
        for group in (g for g in groups if g.room is room):
            names = ", ".join(f"[`{room.prefix}{name}`](#{name})" for name in group.names)
            lines.append(f"  - [{group.title}](#{group.anchor}): {names}")
    for room in ROOMS:
        module = modules[room.module]
        lines += ["", f'<a id="{room.anchor}"></a>', "", f"## `{room.module}`"]
        described = docstring_markdown(module)
        if described:
            lines += ["", *described]
        for group in (g for g in groups if g.room is room):
            lines += ["", f'<a id="{group.anchor}"></a>', "", f"### {group.title}"]
            for name in group.names:
                obj = _target(module, room, name)
                lines += ["", *_export(room, name, obj, guides.get(name, []))]
    return "\n".join(lines) + "\n"


def _room_module(package: griffe.Module, room: Room) -> griffe.Module:
    _, _, short = room.module.partition(".")
    module = package.members.get(short) if short else package
    if not isinstance(module, griffe.Module):
        raise ValueError(f"{room.module} is missing: expected it at {room.source}")
    return module


def _first_sentence(module: griffe.Module) -> str:
    text = " ".join((module.docstring.value if module.docstring else "").split("\n\n")[0].split())
    return text.split(". ")[0].rstrip(".") + "." if text else ""


def _target(module: griffe.Module, room: Room, name: str) -> griffe.Object:
    try:
        member = module[name]
    except KeyError:
        raise ValueError(f"{room.module}.__all__ names {name!r}, which it lacks") from None
    target = member.final_target if isinstance(member, griffe.Alias) else member
    assert isinstance(target, griffe.Object)
    return target


def _export(room: Room, name: str, obj: griffe.Object, guides: list[str]) -> list[str]:
    lines = [f'<a id="{name}"></a>', "", f"#### `{room.prefix}{name}`", ""]
    lines += ["```pyi", *_stub(name, obj), "```", ""]
    if guides:
        links = ", ".join(f"[{guide}](guides/{guide}.md)" for guide in guides)
        lines += [f"Guide: {links}.", ""]
    lines += docstring_markdown(obj)
    if isinstance(obj, griffe.Class):
        for member_name, member in _members(obj):
            doc = docstring_markdown(member)
            if doc:
                lines += ["", f"##### `{room.prefix}{name}.{member_name}`", "", *doc]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# -- stubs ------------------------------------------------------------------------------------


def _stub(name: str, obj: griffe.Object) -> list[str]:
    if isinstance(obj, griffe.Function):
        return _function(name, obj, indent="")
    if isinstance(obj, griffe.Class):
        return _class(name, obj)
    if isinstance(obj, griffe.TypeAlias):
        return [f"type {name} = {obj.value}"]
    if isinstance(obj, griffe.Attribute):
        annotation = f": {obj.annotation}" if obj.annotation is not None else ""
        value = f" = {_one_line(str(obj.value))}" if obj.value is not None else ""
        return [f"{name}{annotation}{value}"]
    return [name]


def _class(name: str, cls: griffe.Class) -> list[str]:
    bases = ", ".join(str(base) for base in cls.bases)
    lines = [f"class {name}({bases}):" if bases else f"class {name}:"]
    body: list[str] = []
    is_data = "dataclass" in cls.labels or any(str(b).endswith("BaseModel") for b in cls.bases)
    fields = [(n, m) for n, m in _members(cls) if isinstance(m, griffe.Attribute)]
    init = cls.members.get("__init__")
    init_params = {p.name: p for p in init.parameters} if isinstance(init, griffe.Function) else {}
    for field_name, field in fields:
        if "property" in field.labels:
            continue
        annotation = field.annotation
        if annotation is None and field_name in init_params and str(field.value) == field_name:
            # ``self.run_id = run_id``: the attribute is the parameter, so it has its type.
            annotation = init_params[field_name].annotation
        if not is_data and annotation is None:
            continue
        typed = f": {annotation}" if annotation is not None else ""
        value = f" = {_one_line(str(field.value))}" if is_data and field.value is not None else ""
        body.append(f"    {field_name}{typed}{value}")
    if isinstance(init, griffe.Function) and not is_data:
        body += _function("__init__", init, indent="    ")
    for member_name, member in _members(cls):
        if isinstance(member, griffe.Attribute) and "property" in member.labels:
            returns = f" -> {member.annotation}" if member.annotation is not None else ""
            body += ["    @property", f"    def {member_name}(self){returns}: ..."]
        elif isinstance(member, griffe.Function):
            body += _function(member_name, member, indent="    ")
    return lines + (body or ["    ..."])


def _function(name: str, function: griffe.Function, *, indent: str) -> list[str]:
    labels = function.labels
    decorators = [f"{indent}@{d}" for d in ("classmethod", "staticmethod") if d in labels]
    prefix = "async def" if "async" in function.labels else "def"
    returns = f" -> {function.returns}" if function.returns is not None else ""
    parts = list(_parameters(function.parameters))
    head = f"{indent}{prefix} {name}("
    tail = f"){returns}: ..." if indent else f"){returns}"
    one_line = head + ", ".join(parts) + tail
    if len(one_line) <= _LINE or not parts:
        return [*decorators, one_line]
    return [*decorators, head, *(f"{indent}    {part}," for part in parts), indent + tail]


def _parameters(parameters: Iterable[griffe.Parameter]) -> Iterable[str]:
    listed = list(parameters)
    star_done = any(p.kind is griffe.ParameterKind.var_positional for p in listed)
    for index, parameter in enumerate(listed):
        kind = parameter.kind
        if kind is griffe.ParameterKind.keyword_only and not star_done:
            yield "*"
            star_done = True
        text = parameter.name
        if kind is griffe.ParameterKind.var_positional:
            text = f"*{text}"
        elif kind is griffe.ParameterKind.var_keyword:
            text = f"**{text}"
        if parameter.annotation is not None:
            text += f": {parameter.annotation}"
        if parameter.default is not None:
            spaced = parameter.annotation is not None  # PEP 8: `x: int = 1`, but `x=1`
            text += f" = {parameter.default}" if spaced else f"={parameter.default}"
        yield text
        following = listed[index + 1].kind if index + 1 < len(listed) else None
        if kind is griffe.ParameterKind.positional_only and following is not kind:
            yield "/"


def _members(cls: griffe.Class) -> list[tuple[str, griffe.Object]]:
    """The public members a class defines itself, in source order."""
    found: list[tuple[str, griffe.Object]] = []
    for member_name, member in cls.members.items():
        if member_name.startswith("_") or member_name == "model_config":
            continue
        if isinstance(member, griffe.Alias):
            continue
        found.append((member_name, member))
    return found


def _one_line(text: str) -> str:
    return " ".join(text.split())
