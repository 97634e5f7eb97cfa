"""Registered tools, and the per-turn resolution of what a run may call."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import JsonValue

from psych_core import (
    AgentSpec,
    AgentStep,
    AgentTool,
    CodeTool,
    HttpTool,
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
    WorkflowSpec,
    WorkflowStep,
    WorkflowTool,
    call_name,
    walk,
)
from psych_runtime.tools._agent import (
    agent_definition,
    agent_input,
    workflow_definition,
    workflow_input,
)
from psych_runtime.tools._builtin_waits import builtin_refs
from psych_runtime.tools._code import CodeFunction
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._http import EgressPolicy, HttpTools
from psych_runtime.tools._sandboxed import SandboxCall, check_sandbox
from psych_runtime.tools._wait import WaitFor

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

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """Carry the call out; `ToolRaised` fails it, `ToolOutcomeUnknown` settles it."""
        ...


@dataclass(frozen=True, slots=True)
class ResolvedTool:
    """A tool this run may call now: its reference in the spec and what runs it (None for
    tools the runtime runs itself: subagents)."""

    ref: ToolRef
    function: ToolExecutor | None = None

    def definition(self) -> ToolDefinition:
        """How the model is offered this tool."""
        if isinstance(self.ref, AgentTool):
            return agent_definition(self.ref)
        if isinstance(self.ref, WorkflowTool):
            return workflow_definition(self.ref)
        assert self.function is not None
        return self.function.definition(self.ref.description or None)

    def validate(self, arguments: str) -> dict[str, Any]:
        """The call's arguments, parsed and validated; `InvalidArguments` says what is wrong."""
        if isinstance(self.ref, WorkflowTool):
            return workflow_input(self.ref, arguments)
        if self.function is None:
            return agent_input(arguments)
        return self.function.validate(arguments)


class ToolRegistry:
    """What a session or worker can run: its code functions by name, its sandbox, and the
    egress its http tools send through.

    Args:
        tools: the code functions.
        sandbox: where sandbox tools run; a spec with a sandbox tool is refused without one.
        egress: which addresses http tools may reach (each tool only its own host).
        secrets: where the secrets named in http tools' headers come from.
    """

    def __init__(
        self,
        tools: Iterable[ToolFunction] = (),
        *,
        sandbox: Sandbox | None = None,
        egress: EgressPolicy | None = None,
        secrets: SecretResolver | None = None,
    ) -> None:
        self._functions: dict[str, CodeFunction] = {}
        for tool in tools:
            function = tool if isinstance(tool, CodeFunction) else CodeFunction.of(tool)
            if function.name in self._functions:
                raise SpecError(f"two tools are registered under the name {function.name!r}")
            self._functions[function.name] = function
        self.sandbox = sandbox
        self._http = HttpTools(egress, secrets)

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
        again before every model call; a call to any other tool is refused and never runs.

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

    async def aclose(self) -> None:
        """Close the connections the http tools opened."""
        await self._http.aclose()


def _narrowed(
    candidates: dict[str, ResolvedTool], scope: Scope | None, policy: Policy | None
) -> Mapping[str, ResolvedTool]:
    if policy is None or scope is None or not candidates:
        return candidates
    kept = set(policy.narrow(scope, tuple(candidates)))
    return {name: tool for name, tool in candidates.items() if name in kept}
