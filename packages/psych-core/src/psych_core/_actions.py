"""`next_action(state)`: what a run does next, decided from its state alone.

Actions are of two kinds. A *decision* only writes records (start a call, settle one, end the
run): the worker adds them to the batch it is building. An *effect* touches the world (call the
model, run tools): the worker commits its batch first, so a decision is always durable before
anything acts on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from psych_core._errors import SpecError
from psych_core._messages import ToolCall
from psych_core._state import RunState


@dataclass(frozen=True, slots=True)
class CallModel:
    """Effect: send the conversation to the model."""


@dataclass(frozen=True, slots=True)
class RunCalls:
    """Effect: run these calls, already recorded as started by this attempt."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class StartCalls:
    """Decision: the model asked for these calls; record each as started, or refused."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class RetryCalls:
    """Decision: these calls of safe-to-retry tools were cut off by a crash; start them again."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class SettleCalls:
    """Decision: these calls were cut off by a crash and are not safe to retry: settle unknown."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class Complete:
    """Decision: the model gave its final answer; complete the run."""


@dataclass(frozen=True, slots=True)
class Fail:
    """Decision: end the run as failed, for this reason."""

    reason: str
    error: str


@dataclass(frozen=True, slots=True)
class Finished:
    """Nothing to do: the run has ended."""


Action = CallModel | RunCalls | StartCalls | RetryCalls | SettleCalls | Complete | Fail | Finished
"""Anything `next_action` can return."""

Effect = CallModel | RunCalls
"""The actions that touch the world; the worker commits its batch before each."""


def next_action(state: RunState) -> Action:
    """What the run must do next. Pure: the same state always gives the same action."""
    if state.ended:
        return Finished()
    spec = state.spec
    if spec is None:
        raise SpecError(f"run {state.run_id}: next_action needs the state built with its spec")
    if state.attempt == 0:
        raise SpecError(f"run {state.run_id}: next_action needs a claimed run (no attempt yet)")

    requested = tuple(c.call for c in state.calls if c.phase == "requested")
    if requested:
        return StartCalls(requested)
    orphans = tuple(
        c.call
        for c in state.calls
        if c.phase == "started" and (c.started_attempt or 0) < state.attempt
    )
    if orphans:
        retry = tuple(c for c in orphans if _safe_to_retry(state, c.name))
        return RetryCalls(retry) if retry else SettleCalls(orphans)
    running = tuple(c.call for c in state.calls if c.phase == "started")
    if running:
        return RunCalls(running)

    if state.answered:
        problem = _output_problem(state)
        if problem is not None:
            return Fail("invalid_output", problem)
        return Complete()
    if state.turn_model_calls >= spec.max_turns:
        return Fail(
            "max_turns",
            f"run {state.run_id}: the model was called {state.turn_model_calls} times without "
            f"a final answer, reaching AgentSpec {spec.name!r} max_turns={spec.max_turns}; "
            "raise max_turns or check why the model keeps calling tools",
        )
    return CallModel()


def _safe_to_retry(state: RunState, name: str) -> bool:
    tool = state.spec.tool(name) if state.spec is not None else None
    return tool is not None and tool.safe_to_retry


def _output_problem(state: RunState) -> str | None:
    spec = state.spec
    if spec is None or spec.output_type is None:
        return None
    try:
        json.loads(state.last_text or "")
    except ValueError as exc:
        return (
            f"run {state.run_id}, seq {state.last_seq}: AgentSpec {spec.name!r} asks for "
            f"structured output, but the final answer is not JSON ({exc})"
        )
    return None
