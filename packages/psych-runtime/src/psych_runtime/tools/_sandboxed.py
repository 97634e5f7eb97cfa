"""The sandbox-tool executor: a declared program, filled in from the model's arguments and run
through the `Sandbox` port under the terms the tool requires."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from psych_core import (
    ExecLimits,
    ExecRequest,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxRefused,
    SandboxTool,
    ToolDefinition,
)
from psych_runtime.tools._code import ToolRaised
from psych_runtime.tools._context import ToolContext
from psych_runtime.tools._declared import parse_arguments, ran_out_of_time, render, tail
from psych_runtime.tools._wait import WaitFor

ERROR_OUTPUT_CHARS = 2000
"""How much of a failed program's stderr (and stdout) the model is shown, from the end."""


def exec_request(ref: SandboxTool, arguments: dict[str, Any]) -> ExecRequest:
    """The sandbox request for a call of `ref` with these (validated) arguments."""
    values = {name: render(arguments[name]) for name in ref.names}
    return ExecRequest(
        argv=tuple(arg.format_map(values) for arg in ref.argv),
        stdin=ref.stdin.format_map(values).encode(),
        files={path: content.encode() for path, content in ref.files.items()},
        env=dict(ref.env),
        limits=ExecLimits(
            wall_seconds=ref.timeout,
            cpu_seconds=ref.cpu_seconds,
            memory_bytes=ref.memory_bytes,
            processes=ref.processes,
            output_bytes=ref.output_bytes,
        ),
        network=ref.network,
        require_level=ref.require_level,
        require=frozenset(ref.require),
    )


def check_sandbox(ref: SandboxTool, sandbox: Sandbox) -> None:
    """Raise `SandboxRefused` when `sandbox` could never run `ref` as it requires."""
    # The argv templates stand in for the program: `check` judges only the terms.
    sandbox.check(
        ExecRequest(
            argv=ref.argv,
            limits=ExecLimits(wall_seconds=ref.timeout, cpu_seconds=ref.cpu_seconds),
            network=ref.network,
            require_level=ref.require_level,
            require=frozenset(ref.require),
        )
    )


def isolation_of(result: ExecResult) -> dict[str, JsonValue]:
    """What the execution proved about how it ran: backend, level and the ten grades."""
    isolation: dict[str, JsonValue] = {
        "backend": result.backend,
        "level": result.level,
        "grades": {guarantee: str(grade) for guarantee, grade in result.grades.items()},
    }
    if result.reasons:
        isolation["reasons"] = {guarantee: str(why) for guarantee, why in result.reasons.items()}
    return isolation


@dataclass(frozen=True, slots=True)
class SandboxCall:
    """One sandbox tool, ready to be offered to a model and called."""

    ref: SandboxTool
    sandbox: Sandbox

    def definition(self, description: str | None = None) -> ToolDefinition:
        """How the model is offered this tool."""
        text = description or self.ref.description or f"Run {' '.join(self.ref.argv)}"
        return ToolDefinition(self.ref.name, text, self.ref.arguments_schema)

    def validate(self, arguments: str) -> dict[str, Any]:
        """The model's arguments, checked against the tool's schema."""
        return parse_arguments(self.ref.arguments_schema, arguments)

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> JsonValue | WaitFor:
        """Run the program; its output and the isolation it ran under are the result.

        Raises `ToolRaised` when the sandbox refused, the output was withheld, the program
        exited non-zero or hit a limit; a stop by the wall-time limit follows the timeout rule
        (`ToolOutcomeUnknown` for an unsafe tool).
        """
        ref = self.ref
        try:
            result = await self.sandbox.run(exec_request(ref, arguments))
        except SandboxRefused as exc:
            raise ToolRaised(f"tool {ref.name!r} did not run: {exc}") from None
        except SandboxError as exc:
            raise ToolRaised(f"tool {ref.name!r}: {exc}") from None
        where = f"sandbox {result.backend!r}, isolation level {result.level}"
        if result.withheld is not None:
            raise ToolRaised(
                f"tool {ref.name!r}: the program's output was withheld ({where}): {result.withheld}"
            )
        if result.limit_hit == "wall_time":
            raise ran_out_of_time(
                ref,
                f"tool {ref.name!r} did not finish within its timeout of {ref.timeout:g} s "
                f"({where} stopped it)",
            )
        if result.limit_hit is not None or result.exit_code != 0:
            raise ToolRaised(_failure(ref, result, where))
        output: dict[str, JsonValue] = {
            "exit_code": 0,
            "stdout": result.stdout_text,
            "stderr": result.stderr_text,
        }
        if result.stdout_truncated:
            output["stdout_truncated"] = True
        if result.stderr_truncated:
            output["stderr_truncated"] = True
        output["isolation"] = isolation_of(result)
        return output


def _failure(ref: SandboxTool, result: ExecResult, where: str) -> str:
    if result.limit_hit is not None:
        what = f"was stopped by its {result.limit_hit.replace('_', ' ')} limit"
    elif result.signal is not None:
        what = f"was killed by signal {result.signal}"
    else:
        what = f"exited with status {result.exit_code}"
    parts = [f"tool {ref.name!r}: the program {what} ({where})"]
    for stream, text in (("stderr", result.stderr_text), ("stdout", result.stdout_text)):
        if text.strip():
            parts.append(f"{stream}:\n{tail(text.rstrip(), ERROR_OUTPUT_CHARS)}")
    return "\n".join(parts)
