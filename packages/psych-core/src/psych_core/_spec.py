"""Agent specs: what an agent is, as data that hashes to a version."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from psych_core._canonical import canonical_json, version_of

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

Comparison = Literal["eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "exists"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelRef(_Frozen):
    """Which model serves an agent, and how.

    Attributes:
        model: the model's name at the provider, e.g. ``"gpt-4.1-mini"``.
        fallbacks: models to try in order when `model` keeps failing.
        temperature: sampling temperature; None leaves the provider's default.
        max_output_tokens: a cap on each reply's length; None leaves the provider's default.
    """

    model: str = Field(min_length=1)
    fallbacks: tuple[str, ...] = ()
    temperature: float | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)


class ArgRule(_Frozen):
    """A declarative rule on a tool call's arguments, e.g. ``ArgRule("amount", "gt", 100)``.

    `path` is a dotted path into the arguments object (``"refund.amount"``). The rule holds when
    the value found there compares to `value` with `op`. A path that is absent matches only
    ``op="exists"`` with ``value=False``.
    """

    path: str = Field(min_length=1)
    op: Comparison
    value: JsonValue = None

    def __init__(
        self, path: str | None = None, op: Comparison | None = None, value: Any = None, **data: Any
    ) -> None:
        if path is not None:
            data["path"] = path
        if op is not None:
            data["op"] = op
        if value is not None:
            data["value"] = value
        super().__init__(**data)

    def matches(self, arguments: JsonValue) -> bool:
        """Whether the rule holds for these call arguments."""
        found, present = _lookup(arguments, self.path)
        if self.op == "exists":
            want = True if self.value is None else bool(self.value)
            return present is want
        if not present:
            return False
        try:
            return _compare(found, self.op, self.value)
        except TypeError:
            # Values of different kinds (a string against a number) never satisfy an order.
            return False


def _lookup(arguments: JsonValue, path: str) -> tuple[JsonValue, bool]:
    current: JsonValue = arguments
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None, False
    return current, True


def _compare(found: Any, op: Comparison, value: Any) -> bool:
    match op:
        case "eq":
            return bool(found == value)
        case "ne":
            return bool(found != value)
        case "gt":
            return bool(found > value)
        case "ge":
            return bool(found >= value)
        case "lt":
            return bool(found < value)
        case "le":
            return bool(found <= value)
        case "in":
            return isinstance(value, list) and found in value
        case "not_in":
            return isinstance(value, list) and found not in value
        case _:  # pragma: no cover - "exists" is handled by the caller
            raise ValueError(op)


ApprovalRule = bool | ArgRule | str
"""``True`` / ``False``, an `ArgRule`, or the name of a rule the worker registers."""


class CodeTool(_Frozen):
    """A tool backed by a Python function registered under `name` with the session or worker.

    Attributes:
        name: the tool's name as the model sees it; also the registered function's name.
        safe_to_retry: True when running the call twice does no harm. After a crash an
            unfinished call of a safe tool is run again; any other is settled ``unknown``.
        requires_approval: whether a person must approve the call before it runs.
        timeout: seconds the call may take; None for no limit.
        description: overrides the function's docstring as the model's description.
    """

    kind: Literal["code"] = "code"
    name: str
    safe_to_retry: bool = False
    requires_approval: ApprovalRule = False
    timeout: float | None = Field(default=None, gt=0)
    description: str | None = None

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not _TOOL_NAME.match(name):
            raise ValueError(
                f"tool name {name!r} must be 1 to 64 letters, digits, '_' or '-' "
                "(what model providers accept)"
            )
        return name


class AgentTool(_Frozen):
    """A subagent: calling this tool starts a child run of `spec` with its own log.

    The parent waits (reason ``children``) without holding a worker and is woken by the
    child's final append; the call's result is the child's output. The child may use only tools
    its parent may use: its spec's tools are narrowed to the parent's.

    Attributes:
        name: the tool's name as the parent's model sees it.
        spec: the child agent.
        description: what the model is told the subagent does (default: its instructions).
    """

    kind: Literal["agent"] = "agent"
    name: str
    spec: AgentSpec
    description: str | None = None
    safe_to_retry: bool = False
    requires_approval: ApprovalRule = False
    timeout: float | None = Field(default=None, gt=0)

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        return CodeTool._check_name(name)


ToolRef = Annotated[CodeTool | AgentTool, Field(discriminator="kind")]
"""Any tool reference an `AgentSpec` can hold, told apart by its ``kind``."""


class Skill(_Frozen):
    """A named piece of instructions an agent can be given.

    Attributes:
        name: a short identifier.
        description: one line saying when the skill applies.
        instructions: the text added to the agent's instructions.
    """

    name: str = Field(min_length=1)
    description: str = ""
    instructions: str


class AgentSpec(_Frozen):
    """What an agent is: its instructions, model, tools and limits, as hashable data.

    Attributes:
        name: the agent's name; shown in status and reports.
        instructions: the system instructions.
        model: which model serves it.
        tools: the tools it may call.
        skills: extra instructions, added after `instructions`.
        output_type: a JSON schema the final answer must satisfy (a pydantic model class is
            turned into its schema); None for plain text.
        max_turns: how many times the model may be called while answering one user message.
    """

    name: str = Field(min_length=1)
    instructions: str = ""
    model: ModelRef
    tools: tuple[ToolRef, ...] = ()
    skills: tuple[Skill, ...] = ()
    output_type: dict[str, JsonValue] | None = None
    max_turns: int = Field(default=10, gt=0)

    @field_validator("output_type", mode="before")
    @classmethod
    def _schema_of_model(cls, value: Any) -> Any:
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value.model_json_schema()
        return value

    @model_validator(mode="after")
    def _unique_tools(self) -> AgentSpec:
        seen: set[str] = set()
        for tool in self.tools:
            if tool.name in seen:
                raise ValueError(f"AgentSpec {self.name!r} names tool {tool.name!r} twice")
            seen.add(tool.name)
        return self

    @property
    def version(self) -> str:
        """``"sha256:" + hex`` of this spec's canonical JSON; equal specs hash equal.

        Computed on every access (a few microseconds): a cached value would survive
        `model_copy(update=...)` and name the wrong spec.
        """
        return version_of(self)

    def canonical_json(self) -> str:
        """The canonical JSON this spec's version is the hash of."""
        return canonical_json(self)

    def tool(self, name: str) -> ToolRef | None:
        """The tool reference named `name`, or None."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    @property
    def system_prompt(self) -> str:
        """The instructions followed by each skill's instructions."""
        parts = [self.instructions] if self.instructions else []
        parts.extend(f"## {skill.name}\n{skill.instructions}" for skill in self.skills)
        return "\n\n".join(parts)


AgentTool.model_rebuild()
