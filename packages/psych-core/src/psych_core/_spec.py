"""Agent specs: what an agent is, as data that hashes to a version."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    field_validator,
    model_validator,
)

from psych_core._canonical import spec_canonical_json, spec_version
from psych_core._isolation import Guarantee, IsolationLevel, Network
from psych_core._json_schema import schema_problems
from psych_core._skills import LOAD_SKILL_TOOL, checks_links, skills_problem, skills_prompt
from psych_core._templates import UrlTemplate, placeholders

if TYPE_CHECKING:
    from psych_core._workflow_spec import WorkflowSpec

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


class Compaction(_Frozen):
    """When and how an agent's conversation is compacted.

    Before a model call, when the last call's reported size (input plus output tokens, as the
    provider measured them) has reached `threshold_tokens`, the older turns are summarised by
    `model` and the next requests are built from the summary plus the `keep_turns` most recent
    user turns, kept as they are. A call whose usage the provider did not report measures
    nothing, so it never triggers a compaction.

    Attributes:
        threshold_tokens: the size, in tokens, at which the conversation is compacted.
        keep_turns: how many of the latest user turns (a user message and everything after it
            up to the next) stay word for word; the current turn is always one of them.
        model: the model that writes the summary (a cheaper one, say); None for the agent's.
        instructions: what the summarising model is told; None for the built-in ones
            (``psych_core._compaction.SUMMARY_INSTRUCTIONS``).
    """

    threshold_tokens: int = Field(gt=0)
    keep_turns: int = Field(default=1, ge=1)
    model: ModelRef | None = None
    instructions: str | None = None


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


HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
"""The methods an `HttpTool` may send."""

_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_BODYLESS: frozenset[str] = frozenset({"GET", "HEAD"})
KiB = 1024
MiB = 1024 * KiB


def _object_schema(
    declared: dict[str, JsonValue] | None, names: tuple[str, ...]
) -> dict[str, JsonValue]:
    if declared is not None:
        return declared
    # Undeclared: every placeholder is a required string, and nothing else is accepted.
    properties: dict[str, JsonValue] = {name: {"type": "string"} for name in names}
    return {
        "type": "object",
        "properties": properties,
        "required": list(names),
        "additionalProperties": False,
    }


def _check_parameters(
    tool: str, schema: dict[str, JsonValue], placed: tuple[str, ...]
) -> tuple[dict[str, JsonValue], set[str]]:
    """The schema's properties and required names; `ValueError` when it cannot serve."""
    problems = schema_problems(schema)
    if schema.get("type") != "object":
        problems.append('the schema must have "type": "object"')
    if problems:
        raise ValueError(
            f"tool {tool!r}: its parameters schema is not usable: {'; '.join(problems)}"
        )
    properties = schema.get("properties", {})
    assert isinstance(properties, dict)
    required = schema.get("required", [])
    assert isinstance(required, list)
    missing = [name for name in placed if name not in properties]
    if missing:
        raise ValueError(
            f"tool {tool!r}: placeholder(s) {', '.join(missing)} are not parameters: add them "
            'to parameters["properties"]'
        )
    return properties, {str(name) for name in required}


class HttpTool(_Frozen):
    """A tool that is one declared HTTP request, sent through the egress seam.

    The model fills in the parameters; the runtime builds the request. Placeholders
    (``{order_id}``) in the URL's path and query values take the argument of that name,
    percent-encoded, so a value can never change the host. A path argument fills exactly one
    segment: one holding ``/`` or a backslash, or making the segment empty, ``.`` or ``..`` (even
    %-encoded), is refused as ``invalid_arguments`` before anything is sent. A query pair
    whose value is exactly one placeholder is left out when that (optional) argument is
    absent. The arguments the URL does not use are sent as a JSON object body (so a ``GET`` or
    ``HEAD`` tool may have no other parameter).

    Header values may name secrets (``{"Authorization": "Bearer {BILLING_TOKEN}"}``): the names
    are resolved through the worker's `SecretResolver` when the request is sent, and no value
    is ever written to the log. Headers never take arguments.

    The worker lets the request reach only the URL's host (the declaration adds it to the
    allowlist); which addresses it may resolve to (public only, or loopback, private) is the
    worker's `EgressPolicy`. A 2xx response is the call's result (parsed JSON, or text); a
    longer one than `max_response_bytes` is cut there with a note saying so. Any other status
    fails the call with an error the model reads: the status and the start of the body.

    Attributes:
        name: the tool's name as the model sees it.
        description: what the model is told the tool does.
        method: the HTTP method.
        url: ``http(s)://host[:port]/path?query`` with ``{name}`` placeholders in the path and
            the query values.
        headers: request headers; ``{NAME}`` in a value names a secret.
        parameters: a JSON schema (an object) for the arguments; by default every placeholder
            is a required string. Only the keywords `psych_core` validates are accepted.
        max_response_bytes: the most of a response body the model is given.
        timeout: seconds the whole call may take; None leaves the egress's own timeouts
            (30 s per read, 10 s to connect, 300 s in all).
        safe_to_retry: True when sending the request twice does no harm (a GET, or an API
            that takes an idempotency key). A timeout of an unsafe request is settled
            ``unknown``: it may have reached the server.
        requires_approval: whether a person must approve the call before it is sent.
    """

    kind: Literal["http"] = "http"
    name: str
    description: str = ""
    method: HttpMethod = "GET"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    parameters: dict[str, JsonValue] | None = None
    max_response_bytes: int = Field(default=256 * KiB, gt=0)
    timeout: float | None = Field(default=None, gt=0)
    safe_to_retry: bool = False
    requires_approval: ApprovalRule = False

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        return CodeTool._check_name(name)

    @model_validator(mode="after")
    def _check_request(self) -> HttpTool:
        url = UrlTemplate.parse(self.url)
        for header, template in self.headers.items():
            if not _HEADER_NAME.match(header):
                raise ValueError(f"tool {self.name!r}: {header!r} is not a valid header name")
            placeholders(template, f"tool {self.name!r} header {header!r}")
        properties, required = _check_parameters(self.name, self.arguments_schema, url.names)
        optional_path = [name for name in url.path_names if name not in required]
        if optional_path:
            raise ValueError(
                f"tool {self.name!r}: path placeholder(s) {', '.join(optional_path)} must be "
                "required parameters (a path cannot leave a segment out)"
            )
        body = [name for name in properties if name not in url.names]
        if body and self.method in _BODYLESS:
            raise ValueError(
                f"tool {self.name!r}: a {self.method} request has no body, so parameter(s) "
                f"{', '.join(body)} must appear in the url (as ?{body[0]}={{{body[0]}}})"
            )
        return self

    @property
    def arguments_schema(self) -> dict[str, JsonValue]:
        """The JSON schema the model's arguments must satisfy."""
        return _object_schema(self.parameters, UrlTemplate.parse(self.url).names)


class SandboxTool(_Frozen):
    """A tool that runs a declared program in the worker's `Sandbox`.

    The model fills in the parameters; ``{name}`` placeholders in `argv` and `stdin` take the
    argument of that name (a string as it is, any other value as JSON). Each `argv` entry stays
    one argument: nothing goes through a shell unless the program is one. `files` are placed in
    the execution's scratch directory (its working directory) as they are.

    The execution must reach `require_level` and the guarantees in `require`: a sandbox that
    cannot is refused when the worker starts the run, before anything runs; output produced
    under weaker terms than required is withheld, and the model is told so with the reason.
    The result the model reads is ``stdout``, ``stderr`` and the ``isolation`` the execution
    reached (backend, level, the ten grades). A non-zero exit, or a stop by a resource limit,
    fails the call with the exit status and the end of its output; a stop by the wall-time
    limit (`timeout`) is a timeout.

    Attributes:
        name: the tool's name as the model sees it.
        description: what the model is told the tool does.
        argv: the program and its arguments, each a template.
        files: files to place in the scratch directory, by relative path (text, as written).
        stdin: a template for the program's standard input.
        env: environment variables on top of the sandbox's minimal environment.
        parameters: a JSON schema (an object) for the arguments; by default every placeholder
            is a required string.
        require_level: the isolation level the execution must reach (``kernel`` by default:
            namespaces or a container; ``limited`` accepts resource limits without isolation,
            which is all `SubprocessSandbox` reaches).
        require: guarantees that must be ``enforced`` beyond those of `require_level`.
        network: ``none`` (the default) or ``egress``.
        timeout: the wall-time limit, in seconds.
        cpu_seconds: the CPU time each process may use; None for no limit.
        memory_bytes: the memory the execution may hold; None for no limit.
        processes: how many processes the execution may have at once; None for no limit.
        output_bytes: the most of stdout, and of stderr, kept.
        safe_to_retry: True when running the program twice does no harm.
        requires_approval: whether a person must approve the call before it runs.
    """

    kind: Literal["sandbox"] = "sandbox"
    name: str
    description: str = ""
    argv: tuple[str, ...] = Field(min_length=1)
    files: dict[str, str] = Field(default_factory=dict)
    stdin: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    parameters: dict[str, JsonValue] | None = None
    require_level: IsolationLevel = "kernel"
    require: tuple[Guarantee, ...] = ()
    network: Network = "none"
    timeout: float = Field(default=30.0, gt=0)
    cpu_seconds: int | None = Field(default=30, ge=1)
    memory_bytes: int | None = Field(default=512 * MiB, ge=1)
    processes: int | None = Field(default=64, ge=1)
    output_bytes: int = Field(default=1 * MiB, gt=0)
    safe_to_retry: bool = False
    requires_approval: ApprovalRule = False

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        return CodeTool._check_name(name)

    @model_validator(mode="after")
    def _check_program(self) -> SandboxTool:
        for path in self.files:
            parts = path.split("/")
            if not path or path.startswith("/") or ".." in parts or "\0" in path:
                raise ValueError(
                    f"tool {self.name!r}: file {path!r} must be a relative path without '..'"
                )
        for key in self.env:
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"tool {self.name!r}: {key!r} is not a valid variable name")
        _properties, required = _check_parameters(self.name, self.arguments_schema, self.names)
        optional = [name for name in self.names if name not in required]
        if optional:
            raise ValueError(
                f"tool {self.name!r}: placeholder(s) {', '.join(optional)} must be required "
                "parameters"
            )
        return self

    @property
    def names(self) -> tuple[str, ...]:
        """The placeholders of `argv` and `stdin`, in order."""
        found: list[str] = []
        templates = [(f"argv[{i}]", arg) for i, arg in enumerate(self.argv)]
        for what, template in [*templates, ("stdin", self.stdin)]:
            for name in placeholders(template, f"tool {self.name!r} {what}"):
                if name not in found:
                    found.append(name)
        return tuple(found)

    @property
    def arguments_schema(self) -> dict[str, JsonValue]:
        """The JSON schema the model's arguments must satisfy."""
        return _object_schema(self.parameters, self.names)


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


class WorkflowTool(_Frozen):
    """A workflow as a tool: calling it starts a child run of the workflow `spec`.

    The model passes the workflow's input as ``{"input": ...}`` (checked against the
    workflow's `input_schema`); the parent waits (reason ``children``) without holding a
    worker, and the call's result is the workflow's output. The child's tool steps may use
    only tools its parent may use.

    Attributes:
        name: the tool's name as the parent's model sees it.
        spec: the workflow.
        description: what the model is told the workflow does (default: its name).
    """

    kind: Literal["workflow"] = "workflow"
    name: str
    spec: WorkflowSpec
    description: str | None = None
    safe_to_retry: bool = False
    requires_approval: ApprovalRule = False
    timeout: float | None = Field(default=None, gt=0)

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        return CodeTool._check_name(name)


MCP_SEPARATOR = "__"
"""Between a server's name and its tool's in the names the model sees: ``github__search``."""


class McpServer(_Frozen):
    """The tools of an MCP server, by the server's name in the worker's configuration.

    How to reach the server (a command over stdio, or a streamable HTTP URL) and which
    credential to use are not here: they come from ``Runtime(mcp_servers={name: ...})``, so
    the spec's version does not depend on a deployment. The server's tools are listed at the
    start of every turn, narrowed to `tools` and by the `Policy`, and offered to the model as
    ``{name}__{tool}``.

    Whether a call may run again after a crash comes from the tool's annotations, and is
    recorded when the call starts: a tool marked read-only or idempotent is safe; any other
    is settled ``unknown`` when a crash cuts it off.

    Attributes:
        name: the server's name in ``Runtime.mcp_servers``; 1 to 32 letters, digits, ``_``
            or ``-``, without ``__``.
        tools: the server's tools the agent may use, by their names at the server; None for
            every tool it lists.
        required: True: a turn whose server cannot be reached fails the run, naming the
            server. False: the turn goes on without the server's tools, and the log says so.
        deferred: offer the model three discovery tools (``{name}__search``,
            ``{name}__describe``, ``{name}__call``) instead of every tool's schema: for a
            server with a large catalogue.
        requires_approval: whether a person must approve each call of the server's tools.
        approve_destructive: whether a person must approve each call of a tool the server
            does not mark read-only and does not mark non-destructive (MCP's defaults make
            such a tool destructive).
        timeout: seconds a call may take.
    """

    kind: Literal["mcp"] = "mcp"
    name: str
    tools: tuple[str, ...] | None = None
    required: bool = True
    deferred: bool = False
    requires_approval: ApprovalRule = False
    approve_destructive: bool = False
    timeout: float | None = Field(default=60.0, gt=0)

    @field_validator("name")
    @classmethod
    def _check_server_name(cls, name: str) -> str:
        return _source_name("MCP server", "TOOL", name)

    @property
    def safe_to_retry(self) -> bool:
        """False: each of the server's tools says for itself (its annotations), when it starts."""
        return False

    def tool_name(self, tool: str) -> str:
        """The name the model sees for the server's tool `tool`."""
        return f"{self.name}{MCP_SEPARATOR}{tool}"

    def offers(self, tool: str) -> bool:
        """Whether the agent may use the server's tool `tool` (its allow-list)."""
        return self.tools is None or tool in self.tools


_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


def _source_name(what: str, item: str, name: str) -> str:
    """`name` when it can name a tool source whose items the model sees as NAME__ITEM."""
    if not _SERVER_NAME.match(name) or MCP_SEPARATOR in name:
        raise ValueError(
            f"{what} name {name!r} must be 1 to 32 letters, digits, '_' or '-', "
            f"without {MCP_SEPARATOR!r} (the model sees its {item.lower()}s as "
            f"NAME{MCP_SEPARATOR}{item})"
        )
    return name


class A2APeer(_Frozen):
    """The skills of a remote agent, reached by the Agent2Agent protocol, by the peer's name in
    the worker's configuration.

    How to reach the peer (its URL) and which credential to use are not here: they come from
    ``Runtime(a2a_peers={name: A2AHttp(...)})``, so the spec's version does not depend on a
    deployment. The peer's Agent Card is read (and kept for a while) before every turn; each
    of its skills, narrowed to `skills` and by the `Policy`, is offered to the model as
    ``{name}__{skill id}``. A call sends the peer a message for that skill and follows the task
    it starts to its end.

    A call is unsafe to run again after a crash (it is settled ``unknown``) unless the peer's
    card tags the skill ``read-only`` or ``idempotent``, or the skill is in `safe_skills`;
    which it was is recorded when the call starts.

    Attributes:
        name: the peer's name in ``Runtime.a2a_peers``; 1 to 32 letters, digits, ``_`` or
            ``-``, without ``__``.
        skills: the peer's skills the agent may use, by their ids on its card; None for every
            skill the card lists.
        required: True: a turn whose peer cannot be reached fails the run, naming the peer.
            False: the turn goes on without the peer's skills, and the log says so.
        safe_skills: skills the spec's author knows are safe to run again after a crash,
            whatever the card says.
        requires_approval: whether a person must approve each call of the peer's skills.
        timeout: seconds a call may take, the remote task followed to its end included; when
            it runs out, the remote task is cancelled.
    """

    kind: Literal["a2a"] = "a2a"
    name: str
    skills: tuple[str, ...] | None = None
    required: bool = True
    safe_skills: tuple[str, ...] = ()
    requires_approval: ApprovalRule = False
    timeout: float | None = Field(default=300.0, gt=0)

    @field_validator("name")
    @classmethod
    def _check_peer_name(cls, name: str) -> str:
        return _source_name("A2A peer", "SKILL", name)

    @property
    def safe_to_retry(self) -> bool:
        """False: each skill's safety is said by the peer's card (or `safe_skills`), and
        recorded when its call starts."""
        return False

    def tool_name(self, skill: str) -> str:
        """The name the model sees for the peer's skill `skill`."""
        return f"{self.name}{MCP_SEPARATOR}{skill}"

    def offers(self, skill: str) -> bool:
        """Whether the agent may use the peer's skill `skill` (its allow-list)."""
        return self.skills is None or skill in self.skills


ToolRef = Annotated[
    CodeTool | HttpTool | SandboxTool | AgentTool | WorkflowTool | McpServer | A2APeer,
    Field(discriminator="kind"),
]
"""Any tool reference an `AgentSpec` can hold, told apart by its ``kind``."""


class Skill(_Frozen):
    """A named piece of instructions an agent can be given.

    A skill is inlined in the agent's system prompt, under its name as a heading. An
    `on_demand` skill is not: the prompt lists it by name and description, and the model
    reads it with the built-in tool ``load_skill`` (`LOAD_SKILL_TOOL`) when it needs it.

    Instructions may link to another skill of the same spec with a markdown link whose target
    is ``skill:NAME`` (``see [refunds](skill:refunds)``); each such link must name a skill of
    the spec, which is checked when the spec is built.

    Attributes:
        name: a short identifier; an on-demand skill's is 1 to 64 lowercase letters, digits,
            ``-`` or ``_``, and no other skill of the spec has it.
        description: one line saying when the skill applies; required for an on-demand skill.
        instructions: the text added to the agent's instructions (or, on demand, loaded).
        on_demand: list the skill in the prompt and let the model load it, instead of
            inlining it.
    """

    name: str = Field(min_length=1)
    description: str = ""
    instructions: str
    on_demand: bool = False

    @property
    def section(self) -> str:
        """The skill as the model reads it: its name as a heading, then its instructions."""
        return f"## {self.name}\n{self.instructions}"


ASK_TOOL = "ask_user"
"""The name of the built-in tool an `AgentSpec` with ``ask_user=True`` offers the model."""

REMEMBER_TOOL = "remember"
"""The built-in tool an `AgentSpec` with ``memory=True`` offers to remember a fact."""

FORGET_TOOL = "forget"
"""The built-in tool an `AgentSpec` with ``memory=True`` offers to forget a fact."""


class AgentSpec(_Frozen):
    """What an agent is: its instructions, model, tools and limits, as hashable data.

    Attributes:
        name: the agent's name; shown in status and reports.
        instructions: the system instructions.
        model: which model serves it.
        tools: the tools it may call.
        skills: extra instructions, added after `instructions`; an on-demand skill only by
            name and description, for the model to load (`Skill`).
        output_type: a JSON schema the final answer must satisfy (a pydantic model class is
            turned into its schema); None for plain text.
        max_turns: how many times the model may be called while answering one user message.
        output_retries: how many final answers that are not JSON, or break `output_type`, are
            each answered with what was wrong and a request for a corrected answer before the
            run fails with reason ``invalid_output``. A retry is a model call, so it counts
            toward `max_turns`.
        deadline: seconds the whole run may take from its admission; None for no limit. Once
            it has passed, the run fails with reason ``deadline`` at its next decision: before
            a model call, or when it would wait (a waiting run is woken at its deadline).
            Calls that never began fail; calls that began are settled ``unknown``; child runs
            are cancelled. A call in flight is not cut off (its own timeout bounds it).
        max_failed_calls: how many tool calls in a row may fail (any reason: the tool raised,
            bad arguments, an unknown tool, a denial, a timeout) before the run fails with
            reason ``failed_calls`` instead of calling the model again; a call that finishes
            starts the count over. None for no limit.
        max_identical_calls: how many times the model may ask for the same call (one tool,
            the same arguments) in one run; asking once more fails the run with reason
            ``repeated_call`` before that call starts. None for no limit.
        compaction: when and how the conversation is summarised once it grows past a size
            measured by the provider (`Compaction`); None never compacts. The records
            summarised stay in the log; the model is sent the summary and the recent turns.
        ask_user: offer the model the built-in tool ``ask_user`` (`ASK_TOOL`): a question to
            the user, free text or one of a few options; the run waits for the answer holding
            no worker (``status(...).questions``), and ``answer(store, run_id, call_id,
            answer)`` gives it back as the call's result.
        memory: offer the model the built-in tools ``remember`` (`REMEMBER_TOOL`) and
            ``forget`` (`FORGET_TOOL`), and before each model call add the facts remembered
            about the run's end user (``Scope.principal``, within its tenant) to the
            instructions, each with its id. Facts are kept by the runtime's `UserMemory`
            (``Runtime(memory=...)``), not in the spec or the log: the log records only the
            ids of the facts each model call was given.
    """

    name: str = Field(min_length=1)
    instructions: str = ""
    model: ModelRef
    tools: tuple[ToolRef, ...] = ()
    skills: tuple[Skill, ...] = ()
    output_type: dict[str, JsonValue] | None = None
    max_turns: int = Field(default=10, gt=0)
    output_retries: int = Field(default=2, ge=0)
    deadline: float | None = Field(default=None, gt=0)
    max_failed_calls: int | None = Field(default=None, gt=0)
    max_identical_calls: int | None = Field(default=None, gt=0)
    compaction: Compaction | None = None
    ask_user: bool = False
    memory: bool = False

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
        if self.ask_user and ASK_TOOL in seen:
            raise ValueError(
                f"AgentSpec {self.name!r} has ask_user=True, whose built-in tool is named "
                f"{ASK_TOOL!r}: rename its own tool {ASK_TOOL!r}"
            )
        clash = sorted(seen & {REMEMBER_TOOL, FORGET_TOOL}) if self.memory else []
        if clash:
            raise ValueError(
                f"AgentSpec {self.name!r} has memory=True, whose built-in tools are named "
                f"{REMEMBER_TOOL!r} and {FORGET_TOOL!r}: rename its own tool(s) {clash}"
            )
        if LOAD_SKILL_TOOL in seen and any(skill.on_demand for skill in self.skills):
            raise ValueError(
                f"AgentSpec {self.name!r} has on-demand skills, whose built-in tool is named "
                f"{LOAD_SKILL_TOOL!r}: rename its own tool {LOAD_SKILL_TOOL!r}"
            )
        return self

    @model_validator(mode="after")
    def _check_skills(self, info: ValidationInfo) -> AgentSpec:
        problem = skills_problem(self.name, self.skills, links=checks_links(info.context))
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def version(self) -> str:
        """``"sha256:" + hex`` of this spec's canonical JSON; equal specs hash equal.

        Remembered for this object only (`spec_version`): a copy made with
        `model_copy(update=...)` is hashed anew, so it never names another spec.
        """
        return spec_version(self)

    def canonical_json(self) -> str:
        """The canonical JSON this spec's version is the hash of (remembered for this object
        only, as its version is)."""
        return spec_canonical_json(self)

    def tool(self, name: str) -> ToolRef | None:
        """The tool reference named `name`, or None."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    @property
    def system_prompt(self) -> str:
        """The instructions, then each inline skill's under its name, then the list of the
        on-demand skills (name and description) the model may load with ``load_skill``."""
        parts = [self.instructions] if self.instructions else []
        parts.extend(skills_prompt(self.skills))
        return "\n\n".join(parts)


# `WorkflowTool` names `WorkflowSpec`, which builds on the classes here: the models that
# reach it are completed in `_workflow_spec`, which the package imports with this module.
from psych_core import _workflow_spec  # noqa: E402,F401
