"""Registered tools, and the per-turn resolution of what a run may call."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from psych_core import (
    ASK_TOOL,
    FORGET_TOOL,
    LOAD_SKILL_TOOL,
    REMEMBER_TOOL,
    A2APeer,
    A2APeerNotConfigured,
    AgentSpec,
    AgentStep,
    AgentTool,
    ApprovalRule,
    CodeTool,
    HttpTool,
    McpServer,
    McpServerNotConfigured,
    Policy,
    Sandbox,
    SandboxRefused,
    SandboxTool,
    SandboxToolUnavailable,
    Scope,
    SecretResolver,
    SpecError,
    ToolDefinition,
    ToolNotRegistered,
    ToolRef,
    ToolStep,
    UserMemory,
    WorkflowSpec,
    WorkflowStep,
    WorkflowTool,
    call_name,
    walk,
)
from psych_runtime.tools._a2a import A2AConnection
from psych_runtime.tools._agent import (
    agent_definition,
    agent_input,
    workflow_definition,
    workflow_input,
)
from psych_runtime.tools._ask import AskUser, ask_ref
from psych_runtime.tools._builtin_waits import builtin_refs
from psych_runtime.tools._code import CodeFunction
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._http import EgressPolicy, HttpTools
from psych_runtime.tools._load_skill import LoadSkill, load_skill_ref
from psych_runtime.tools._mcp import McpConnection
from psych_runtime.tools._memory import Forget, Remember, memory_refs
from psych_runtime.tools._sandboxed import SandboxCall, check_sandbox

if TYPE_CHECKING:
    from psych_runtime.tools._a2a._source import A2ATools
    from psych_runtime.tools._mcp._source import McpTools

ToolFunction = Callable[..., Any] | CodeFunction
"""A tool the app registers: a plain function (sync or async) or a described `CodeFunction`."""


class ToolExecutor(Protocol):
    """What runs one kind of tool: a code function, an http request, a sandboxed program."""

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered the tool."""
        ...

    def validate(self, arguments: str) -> dict[str, Any]:
        """The model's arguments, parsed and validated; `InvalidArguments` says what is wrong."""
        ...

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> object:
        """Carry the call out; `ToolRaised` fails it, `ToolOutcomeUnknown` settles it.

        Returns `WaitFor` to suspend the call, else its result: any value `json_result`
        makes JSON (once, before it is recorded)."""
        ...


class SelfJudging(Protocol):
    """An executor whose tool says for itself, per call, whether it is safe to run again and
    when it needs approval (an MCP server's tool, from its annotations) instead of its spec."""

    def safe_to_retry(self, arguments: Mapping[str, Any]) -> bool:
        """Whether the call may run again after a crash; recorded when it starts."""
        ...

    def approval_rule(self, arguments: Mapping[str, Any]) -> ApprovalRule:
        """When the call needs a person's approval."""
        ...


@dataclass(frozen=True, slots=True)
class ResolvedTool:
    """A tool this run may call now: its reference in the spec and what runs it (None for
    tools the runtime runs itself: subagents)."""

    ref: ToolRef
    function: ToolExecutor | None = None
    judge: SelfJudging | None = None
    """Set for a tool that says for itself whether a call is safe to repeat and when it needs
    approval (an MCP server's tool); its spec says for every other."""

    def definition(self) -> ToolDefinition:
        """How the model is offered this tool."""
        if isinstance(self.ref, AgentTool):
            return agent_definition(self.ref)
        if isinstance(self.ref, WorkflowTool):
            return workflow_definition(self.ref)
        assert self.function is not None
        if isinstance(self.ref, McpServer | A2APeer):
            return self.function.definition()
        return self.function.definition(self.ref.description or None)

    def recorded_safety(self, arguments: Mapping[str, Any]) -> bool | None:
        """Whether the call is safe to run again, for its start record: said by the tool
        itself (`SelfJudging`); None when the spec says."""
        return self.judge.safe_to_retry(arguments) if self.judge is not None else None

    def approval_rule(self, arguments: Mapping[str, Any]) -> ApprovalRule:
        """When the call needs a person's approval: its spec's rule, or the tool's own."""
        if self.judge is not None:
            return self.judge.approval_rule(arguments)
        return self.ref.requires_approval

    def validate(self, arguments: str) -> dict[str, Any]:
        """The call's arguments, parsed and validated; `InvalidArguments` says what is wrong."""
        if isinstance(self.ref, WorkflowTool):
            return workflow_input(self.ref, arguments)
        if self.function is None:
            return agent_input(arguments)
        return self.function.validate(arguments)


@dataclass(frozen=True, slots=True)
class Turn:
    """The tools a run may call this turn, and what could not be had.

    Attributes:
        tools: the resolved tools, by the names the model sees.
        unavailable: ``(source, error)`` of each optional tool source that could not be
            reached: the turn goes on without its tools, and the log says so.
        failure: why a required tool source could not be reached: the turn cannot go on.
        steady: whether every later turn of the same run, scope and allowed tools resolves
            to these same tools: no tool source is listed (an MCP server or A2A peer may
            change what it offers) and no policy narrows them (it may answer differently
            later). An attempt reuses a steady turn instead of resolving it again.
    """

    tools: Mapping[str, ResolvedTool]
    unavailable: tuple[tuple[str, str], ...] = ()
    failure: str | None = None
    steady: bool = False


class ToolRegistry:
    """What a session or worker can run: its code functions by name, its sandbox, and the
    egress its http tools send through.

    Args:
        tools: the code functions.
        sandbox: where sandbox tools run; a spec with a sandbox tool is refused without one.
        egress: which addresses http tools may reach (each tool only its own host).
        secrets: where the secrets named in http tools' headers (and MCP servers'
            credentials) come from.
        mcp_servers: how to reach the MCP servers specs name, by name.
        a2a_peers: how to reach the A2A peers specs name, by name.
        memory: where the built-in ``remember`` and ``forget`` tools keep facts about end
            users (`AgentSpec.memory`); without it a spec's memory tools are unavailable.
    """

    def __init__(
        self,
        tools: Iterable[ToolFunction] = (),
        *,
        sandbox: Sandbox | None = None,
        egress: EgressPolicy | None = None,
        secrets: SecretResolver | None = None,
        mcp_servers: Mapping[str, McpConnection] | None = None,
        a2a_peers: Mapping[str, A2AConnection] | None = None,
        memory: UserMemory | None = None,
    ) -> None:
        self._functions: dict[str, CodeFunction] = {}
        for tool in tools:
            function = tool if isinstance(tool, CodeFunction) else CodeFunction.of(tool)
            if function.name in self._functions:
                raise SpecError(f"two tools are registered under the name {function.name!r}")
            self._functions[function.name] = function
        self.sandbox = sandbox
        self._http = HttpTools(egress, secrets)
        self._egress = egress
        self._secrets = secrets
        self._mcp_servers = dict(mcp_servers or {})
        self._mcp: McpTools | None = None
        self._a2a_peers = dict(a2a_peers or {})
        self._a2a: A2ATools | None = None
        self.memory = memory

    @property
    def names(self) -> tuple[str, ...]:
        """The registered names, sorted."""
        return tuple(sorted(self._functions))

    def missing(self, spec: AgentSpec | WorkflowSpec) -> ToolNotRegistered | None:
        """The first tool `spec` names that this registry cannot run, as an error: a code tool
        with no function, a sandbox tool with no sandbox (or one that refuses its terms). A
        workflow's tools are its tool steps' and those of its agent and nested workflow steps;
        the built-in tools its sleep, wait and human steps call are always there."""
        if isinstance(spec, WorkflowSpec):
            return self._missing_in_workflow(spec)
        for ref in spec.tools:
            missing = self._missing_tool(spec.name, ref, "AgentSpec")
            if missing is not None:
                return missing
        return None

    def _missing_in_workflow(self, spec: WorkflowSpec) -> ToolNotRegistered | None:
        for step in walk(spec.steps):
            match step:
                case ToolStep(tool=tool):
                    missing = self._missing_tool(spec.name, tool, "WorkflowSpec")
                case AgentStep(agent=agent):
                    missing = self.missing(agent)
                case WorkflowStep(workflow=workflow):
                    missing = self.missing(workflow)
                case _:
                    missing = None
            if missing is not None:
                return missing
        return None

    def _missing_tool(self, owner: str, ref: ToolRef, kind: str) -> ToolNotRegistered | None:
        match ref:
            case CodeTool() if ref.name not in self._functions:
                return ToolNotRegistered(owner, ref.name, self.names, spec=kind)
            case SandboxTool():
                problem = self._sandbox_problem(ref)
                if problem is not None:
                    return SandboxToolUnavailable(owner, ref.name, problem, spec=kind)
            case AgentTool() | WorkflowTool():
                return self.missing(ref.spec)
            case McpServer() if ref.name not in self._mcp_servers:
                return McpServerNotConfigured(
                    owner, ref.name, tuple(sorted(self._mcp_servers)), spec=kind
                )
            case A2APeer() if ref.name not in self._a2a_peers:
                return A2APeerNotConfigured(
                    owner, ref.name, tuple(sorted(self._a2a_peers)), spec=kind
                )
            case _:
                pass
        return None

    def _sandbox_problem(self, ref: SandboxTool) -> str | None:
        if self.sandbox is None:
            return (
                "no sandbox was given: pass sandbox=... to the session or Worker "
                "(SubprocessSandbox for limits only, NamespaceSandbox or DockerSandbox to isolate)"
            )
        try:
            check_sandbox(ref, self.sandbox)
        except SandboxRefused as refused:
            return f"its sandbox cannot run it as it requires: {refused}"
        return None

    def resolve(
        self,
        spec: AgentSpec | WorkflowSpec,
        scope: Scope | None = None,
        policy: Policy | None = None,
        allowed: Collection[str] | None = None,
    ) -> Mapping[str, ResolvedTool]:
        """The tools a run of `spec` may call this turn, in the spec's order.

        The spec's tools that this registry can run (a code tool needs its function, a
        sandbox tool the sandbox), then only the names in `allowed` (a child run: the tools
        its parent could use), then only those `policy.narrow` keeps for `scope`. Resolved
        again before every model call (an attempt keeps a `Turn.steady` one); a call to any
        other tool is refused and never runs.

        For a workflow, the names are those its steps call (`psych_core.call_name`): its tool
        steps' tools (narrowed as above), ``agent:NAME`` and ``workflow:NAME`` for the child
        runs of its agent and workflow steps (narrowed by the policy only: their own tools
        are narrowed in the child), and the built-in waits, which are always there.
        """
        if isinstance(spec, WorkflowSpec):
            return self._resolve_workflow(spec, scope, policy, allowed)
        candidates: dict[str, ResolvedTool] = {}
        for ref in spec.tools:
            if allowed is not None and ref.name not in allowed:
                continue
            tool = self._bind(ref)
            if tool is not None:
                candidates[ref.name] = tool
        if spec.ask_user and (allowed is None or ASK_TOOL in allowed):
            asking = AskUser()
            candidates[ASK_TOOL] = ResolvedTool(ask_ref(), asking, judge=asking)
        if spec.memory and self.memory is not None:
            # Each records its own safety when it starts: the spec does not list it.
            remember, forget = Remember(self.memory), Forget(self.memory)
            remember_ref, forget_ref = memory_refs()
            if allowed is None or REMEMBER_TOOL in allowed:
                candidates[REMEMBER_TOOL] = ResolvedTool(remember_ref, remember, judge=remember)
            if allowed is None or FORGET_TOOL in allowed:
                candidates[FORGET_TOOL] = ResolvedTool(forget_ref, forget, judge=forget)
        if any(skill.on_demand for skill in spec.skills):
            # Not narrowed to `allowed`: it reads only the run's own spec, which a child has
            # whatever its parent may use.
            loading = LoadSkill(spec)
            candidates[LOAD_SKILL_TOOL] = ResolvedTool(load_skill_ref(), loading, judge=loading)
        return _narrowed(candidates, scope, policy)

    def _resolve_workflow(
        self,
        spec: WorkflowSpec,
        scope: Scope | None,
        policy: Policy | None,
        allowed: Collection[str] | None,
    ) -> Mapping[str, ResolvedTool]:
        candidates: dict[str, ResolvedTool] = {}
        for step in walk(spec.steps):
            name = call_name(step)
            match step:
                case ToolStep(tool=tool) if allowed is None or tool.name in allowed:
                    bound = self._bind(tool)
                    if bound is not None:
                        candidates[tool.name] = bound
                case AgentStep(agent=agent) if name is not None:
                    candidates[name] = ResolvedTool(AgentTool(name=step.name, spec=agent))
                case WorkflowStep(workflow=workflow) if name is not None:
                    candidates[name] = ResolvedTool(WorkflowTool(name=step.name, spec=workflow))
                case _:
                    pass
        resolved = dict(_narrowed(candidates, scope, policy))
        for name, (ref, executor) in builtin_refs().items():
            resolved[name] = ResolvedTool(ref, executor)
        return resolved

    def _bind(self, ref: ToolRef) -> ResolvedTool | None:
        match ref:
            case CodeTool():
                function = self._functions.get(ref.name)
                return ResolvedTool(ref, function) if function is not None else None
            case HttpTool():
                return ResolvedTool(ref, self._http.bind(ref))
            case SandboxTool():
                if self.sandbox is None:
                    return None
                return ResolvedTool(ref, SandboxCall(ref, self.sandbox))
            case AgentTool() | WorkflowTool():
                return ResolvedTool(ref)
            case McpServer():
                return None  # its tools are listed by the server (`resolve_turn`)
            case A2APeer():
                return None  # its skills are on the peer's card (`resolve_turn`)

    async def resolve_turn(
        self,
        spec: AgentSpec | WorkflowSpec,
        scope: Scope,
        policy: Policy | None = None,
        allowed: Collection[str] | None = None,
    ) -> Turn:
        """`resolve`, and the tools of the MCP servers and A2A peers an agent names: listed by
        each server now (a cached list, read again after the server says it changed), or read
        from each peer's Agent Card (kept for its time to live), narrowed to the reference's
        allow-list, to `allowed` and by `policy`.

        A required server or peer that cannot be reached makes the turn's `failure`; an
        optional one is left out and named in `unavailable`. A server's tool or a peer's
        skill whose name another tool of the spec already has is left out. A spec with
        ``memory=True`` on a registry without a `UserMemory` goes on without its memory,
        named in `unavailable` as ``memory``.
        """
        resolved = self.resolve(spec, scope, policy, allowed)
        unavailable: list[tuple[str, str]] = []
        if isinstance(spec, AgentSpec) and spec.memory and self.memory is None:
            unavailable.append(("memory", NO_MEMORY))
        sources = (
            [ref for ref in spec.tools if isinstance(ref, McpServer | A2APeer)]
            if isinstance(spec, AgentSpec)
            else []
        )
        if not sources:
            return Turn(resolved, tuple(unavailable), steady=policy is None)
        tools: dict[str, ResolvedTool] = {}
        for ref in spec.tools:
            if not isinstance(ref, McpServer | A2APeer):
                if ref.name in resolved:
                    tools[ref.name] = resolved[ref.name]
                continue
            try:
                offered = await self._offered(ref, scope, policy, allowed)
            except _Unavailable as exc:
                if ref.required:
                    return Turn(resolved, failure=str(exc))
                unavailable.append((f"{ref.kind}:{ref.name}", str(exc)))
                continue
            for name, executor in offered.items():
                if name not in tools and spec.tool(name) is None:
                    tools[name] = ResolvedTool(ref, executor, judge=executor)
        # The built-in tools (ask_user, remember, forget, ...) are not among the spec's own;
        # they are kept, and a server's tool of the same name gives way to them.
        for name, tool in resolved.items():
            if spec.tool(name) is None:
                tools[name] = tool
        return Turn(tools, tuple(unavailable))

    async def _offered(
        self,
        ref: McpServer | A2APeer,
        scope: Scope,
        policy: Policy | None,
        allowed: Collection[str] | None,
    ) -> Mapping[str, _SourceExecutor]:
        """What one MCP server or A2A peer offers this turn; `_Unavailable` when it cannot."""
        if isinstance(ref, A2APeer):
            peers = self._a2a_tools()
            from psych_runtime.tools._a2a._source import PeerUnavailable

            try:
                return await peers.offered(ref, scope, policy, allowed)
            except PeerUnavailable as exc:
                raise _Unavailable(str(exc)) from None
        servers = self._mcp_tools()
        from psych_runtime.tools._mcp._source import ServerUnavailable

        try:
            return (await servers.offered(ref, scope, policy, allowed)).executors
        except ServerUnavailable as exc:
            raise _Unavailable(str(exc)) from None

    def _mcp_tools(self) -> McpTools:
        if self._mcp is None:
            try:
                from psych_runtime.tools._mcp._source import McpTools
            except ImportError as exc:
                raise SpecError(
                    f"MCP servers need the MCP SDK, which is not installed ({exc}): install "
                    "psych-runtime[mcp]"
                ) from exc
            self._mcp = McpTools(self._mcp_servers, self._secrets, self._egress)
        return self._mcp

    def _a2a_tools(self) -> A2ATools:
        if self._a2a is None:
            try:
                from psych_runtime.tools._a2a._source import A2ATools
            except ImportError as exc:
                raise SpecError(
                    f"A2A peers need the A2A SDK, which is not installed ({exc}): install "
                    "psych-runtime[a2a]"
                ) from exc
            self._a2a = A2ATools(self._a2a_peers, self._secrets, self._egress)
        return self._a2a

    @property
    def a2a(self) -> A2ATools | None:
        """The A2A peer connections this registry made, once a run needed a peer."""
        return self._a2a

    @property
    def mcp(self) -> McpTools | None:
        """The MCP sessions this registry opened, once a run needed a server."""
        return self._mcp

    async def aclose(self) -> None:
        """Close the connections the http tools, MCP servers and A2A peers opened."""
        await self._http.aclose()
        if self._mcp is not None:
            await self._mcp.aclose()
        if self._a2a is not None:
            await self._a2a.aclose()


NO_MEMORY = (
    "the spec has memory=True, but the runtime has no UserMemory: the run goes on without "
    "remember, forget and recalled facts. Pass Runtime(memory=...) (LocalUserMemory, "
    "SQLiteUserMemory or PostgresUserMemory)"
)
"""Why a spec with ``memory=True`` goes without it (`ToolsUnavailable` with source
``memory``)."""


class _Unavailable(Exception):
    """An MCP server or A2A peer whose tools cannot be had this turn; says which and why."""


class _SourceExecutor(ToolExecutor, SelfJudging, Protocol):
    """A tool an MCP server or A2A peer offers: it runs, and says for itself whether a call
    is safe to repeat and when it needs approval."""


def _narrowed(
    candidates: dict[str, ResolvedTool], scope: Scope | None, policy: Policy | None
) -> Mapping[str, ResolvedTool]:
    if policy is None or scope is None or not candidates:
        return candidates
    kept = set(policy.narrow(scope, tuple(candidates)))
    return {name: tool for name, tool in candidates.items() if name in kept}
