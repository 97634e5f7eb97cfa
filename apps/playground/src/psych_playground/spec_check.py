"""Reading a spec someone wants to publish: valid, and runnable by this playground's worker.

Every problem comes back with `loc`, the path to the field in the spec as it was sent
(``["tools", 0, "name"]``; ``[]`` for the spec as a whole), so an editor can point at the line.
Pydantic's error locations name the member of a union they tried (``"code"`` for a
`CodeTool`); those names are not in the JSON, and are left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, JsonValue, ValidationError

from psych_playground.demo_tools import DEMO_TOOL_NAMES
from psych_runtime import AgentSpec, CodeTool, SandboxTool, WorkflowSpec
from psych_runtime.a2a import A2APeer
from psych_runtime.mcp import McpServer

SpecKind = Literal["agent", "workflow"]
Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class SpecProblem:
    """One thing wrong with a spec, where it is, and pydantic's name for the kind of problem."""

    loc: Loc
    msg: str
    type: str


class SpecRejected(ValueError):
    """The spec cannot be published; `problems` says why and where."""

    def __init__(self, problems: Sequence[SpecProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{'/'.join(map(str, p.loc))}: {p.msg}" for p in problems))


def read_spec(kind: SpecKind, data: JsonValue) -> AgentSpec | WorkflowSpec:
    """The spec `data` describes, checked; `SpecRejected` with every problem found."""
    if not isinstance(data, dict):
        raise SpecRejected([SpecProblem((), "a spec is a JSON object", "dict_type")])
    model: type[AgentSpec] | type[WorkflowSpec] = AgentSpec if kind == "agent" else WorkflowSpec
    try:
        spec = model.model_validate(data)
    except ValidationError as error:
        raise SpecRejected(
            [
                SpecProblem(field_path(data, tuple(found["loc"])), found["msg"], found["type"])
                for found in error.errors(include_url=False)
            ]
        ) from None
    try:
        spec.version  # noqa: B018  # a value with no JSON form (NaN) fails only here
    except (TypeError, ValueError) as error:
        raise SpecRejected([SpecProblem((), str(error), "value_error")]) from None
    problems = list(unserved_tools(spec))
    if problems:
        raise SpecRejected(problems)
    return spec


def field_path(data: JsonValue, loc: Loc) -> Loc:
    """`loc` as a path into `data`: the parts that name a union member, not a key, left out."""
    path: list[str | int] = []
    current: JsonValue = data
    for index, part in enumerate(loc):
        child, found = _child(current, part)
        union_tag = isinstance(current, dict) and (
            index < len(loc) - 1 or current.get("kind") == part
        )
        if not found and union_tag:
            continue  # a union member's tag (``code``) or a validator's name: not in the JSON
        current = child  # None past a missing field: the rest of `loc` is kept as it is
        path.append(part)
    return tuple(path)


def unserved_tools(spec: BaseModel) -> Iterator[SpecProblem]:
    """The tools in `spec` (nested agents and workflows too) this playground's worker cannot
    run: a code tool it has no function for, a sandbox, an MCP server or an A2A peer (it is
    configured with none). A run of such a spec would never be served."""
    have = ", ".join(sorted(DEMO_TOOL_NAMES))
    for loc, tool in _tools(spec, ()):
        if isinstance(tool, CodeTool) and tool.name not in DEMO_TOOL_NAMES:
            yield SpecProblem(
                (*loc, "name"),
                f"the playground's worker has no code tool named {tool.name!r} (it has {have})",
                "unserved_tool",
            )
        elif isinstance(tool, SandboxTool | McpServer | A2APeer):
            what = {SandboxTool: "a sandbox", McpServer: "an MCP server", A2APeer: "an A2A peer"}
            yield SpecProblem(
                loc,
                f"tool {tool.name!r} needs {what[type(tool)]}, and the playground's worker is "
                f"configured with none; use its code tools ({have}) or an http tool",
                "unserved_tool",
            )


def _tools(value: object, loc: Loc) -> Iterator[tuple[Loc, BaseModel]]:
    if isinstance(value, CodeTool | SandboxTool | McpServer | A2APeer):
        yield loc, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _tools(getattr(value, name), (*loc, name))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _tools(item, (*loc, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _tools(item, (*loc, key))


def _child(value: JsonValue, part: str | int) -> tuple[JsonValue, bool]:
    if isinstance(value, dict) and isinstance(part, str) and part in value:
        return value[part], True
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part], True
    return None, False
