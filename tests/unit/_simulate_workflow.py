"""A pure simulator of workflow runs: drives `next_action` and writes the records the runtime
would, with each call's outcome, the order calls finish in, and worker crashes scripted.

The decisions are written by the runtime's own `decide`, with the tools resolved by the
runtime's own registry; only the effects are made up here: a call ends as the script says, a
child run ends at once (or never), an event or an answer arrives when the run waits for it, and
time jumps to the due time of a run that waits on the clock. So the reducer and the planner meet
the logs a worker writes, in every order hypothesis can draw.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import JsonValue

from psych_core import (
    BREAKPOINT_TOOL,
    HUMAN_TOOL,
    SLEEP_TOOL,
    WAIT_TOOL,
    Approve,
    AttemptStarted,
    Body,
    ChildEnded,
    ChildFinished,
    ChildStarted,
    CollectChildren,
    Decision,
    Deny,
    Finished,
    InboxEntry,
    Record,
    ReplayOf,
    Resume,
    RunAdmitted,
    RunCalls,
    RunState,
    Scope,
    Signal,
    ToolCall,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    ToolCallWaiting,
    ToolFailureReason,
    WorkflowSpec,
    fold,
    next_action,
    parse_call_id,
    receive,
)
from psych_runtime.runtime._decide import decide
from psych_runtime.tools import ResolvedTool, ToolRegistry
from psych_runtime.tools._context import ToolContext

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Ok:
    """The call returns `result` (a wait's event payload, a person's answer, a child's output)."""

    result: JsonValue = None


@dataclass(frozen=True)
class Fail:
    """The call fails (a child run ends failed; an approval is denied)."""

    reason: ToolFailureReason = "error"
    error: str = "boom"


@dataclass(frozen=True)
class Unknown:
    """The call's outcome is unknown (its tool said so)."""


@dataclass(frozen=True)
class Crash:
    """The worker dies while the call runs (once per call); another attempt takes over."""


@dataclass(frozen=True)
class Late:
    """Nothing comes: a wait, a question or a child run that never answers (its timeout must)."""


Outcome = Ok | Fail | Unknown | Crash | Late
Script = Callable[[str, str, dict[str, Any]], Outcome]
"""``(call id, tool name, arguments) -> outcome``."""


def ok_script(call_id: str, name: str, arguments: dict[str, Any]) -> Outcome:
    """Every call succeeds with a result naming it, and its arguments."""
    return Ok({"call": call_id, **arguments})


class _Echo:
    """A stand-in executor: arguments are any JSON object; nothing ever runs."""

    def definition(self, description: str | None = None) -> Any:
        raise AssertionError("no model is offered a workflow's tools")

    def validate(self, arguments: str) -> dict[str, Any]:
        parsed = json.loads(arguments)
        assert isinstance(parsed, dict)
        return parsed

    async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
        raise AssertionError("the simulator makes effects itself")


def resolved_tools(spec: WorkflowSpec) -> dict[str, ResolvedTool]:
    """The tools a worker would resolve for `spec`, with stand-ins for the code tools."""
    tools = dict(ToolRegistry().resolve(spec))
    for ref in spec.tools:
        tools[ref.name] = ResolvedTool(ref, _Echo())
    return tools


@dataclass
class Simulation:
    """One simulated run of `spec` on `input`.

    Attributes:
        script: how each call ends.
        order: the order the calls of one `RunCalls` finish in (a permutation).
        crash_between: asked before each step whether the worker dies there (then a new
            attempt starts).
        breakpoints, step_mode, replay_of: what the run's dispatch (or replay) chose; a pause
            at a breakpoint is continued as soon as the run waits on it, unless
            `continue_pauses` is False.
    """

    spec: WorkflowSpec
    input: JsonValue = None
    script: Script = ok_script
    order: Callable[[list[ToolCall]], Sequence[ToolCall]] = list
    crash_between: Callable[[], bool] = lambda: False
    run_id: str = "W1"
    max_records: int = 3000
    records: list[Record] = field(default_factory=list)
    now: dt.datetime = T0
    breakpoints: tuple[str, ...] = ()
    step_mode: bool = False
    replay_of: ReplayOf | None = None
    continue_pauses: bool = True

    def __post_init__(self) -> None:
        self.state = RunState.empty(self.run_id, self.spec)
        self.tools = resolved_tools(self.spec)
        self.inbox: list[InboxEntry] = []
        self.sent = 0
        self.attempt = 0
        self.crashed: set[str] = set()
        self.children: dict[str, Outcome] = {}

    # -- the log ------------------------------------------------------------------------------

    def add(self, body: Body) -> None:
        record = Record(
            run_id=self.run_id,
            seq=self.state.next_seq,
            attempt=self.attempt,
            at=self.now,
            body=body,
        )
        self.state = fold(self.state, record)
        self.records.append(record)

    def new_attempt(self) -> None:
        self.attempt += 1
        self.add(AttemptStarted(worker_id=f"w{self.attempt}"))

    def send(self, signal: Signal, key: str | None = None) -> None:
        self.sent += 1
        self.inbox.append(
            InboxEntry(
                run_id=self.run_id,
                number=self.sent,
                key=key or f"k{self.sent}",
                signal=signal,
                at=self.now,
            )
        )

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> list[Record]:
        """The log, until the run ends (or `max_records`)."""
        self.add(
            RunAdmitted(
                agent=self.spec.name,
                spec_version=self.spec.version,
                input=json.dumps(self.input),
                scope=Scope(tenant="t"),
                breakpoints=self.breakpoints,
                step_mode=self.step_mode,
                replay_of=self.replay_of,
            )
        )
        self.new_attempt()
        while not self.state.ended and len(self.records) < self.max_records:
            for entry in self.inbox:
                self.add(receive(self.state, entry))
            self.inbox = []
            if self.crash_between():
                self.new_attempt()
                continue
            action = next_action(self.state, self.now)
            match action:
                case Finished():
                    self._wake()
                case RunCalls(calls):
                    self._run_calls(list(calls))
                case CollectChildren(calls):
                    for call in calls:
                        self._collect(call.call.call_id)
                case _:
                    decision = cast(Decision, action)
                    for body in decide(decision, self.tools, rules={}, validated={}):
                        self.add(body)
        return self.records

    def _wake(self) -> None:
        """The run waits: what the outside world sends, or the clock, wakes it."""
        if self.state.ended:
            return
        self._respond()
        if not self.inbox:
            due = self.state.due_at
            if due is None:
                waits = [c.call.call_id for c in self.state.calls if c.phase != "done"]
                raise AssertionError(f"the run waits forever on {waits}")
            self.now = max(self.now, due)
        self.new_attempt()

    def _respond(self) -> None:
        for call in self.state.calls:
            arguments = json.loads(call.call.arguments or "{}")
            name = call.call.name
            if call.phase == "awaiting_approval":
                decided = self.script(call.call.call_id, "approval", arguments)
                if isinstance(decided, Ok):
                    self.send(Approve(call_id=call.call.call_id, by="ann"))
                else:
                    self.send(Deny(call_id=call.call.call_id, by="ann", reason="no"))
            if call.phase != "waiting" or name == SLEEP_TOOL:
                continue
            if name == BREAKPOINT_TOOL:
                if self.continue_pauses:
                    self.send(Resume(call_id=call.call.call_id, breakpoint=True))
                continue
            outcome = self.script(call.call.call_id, name, arguments)
            if not isinstance(outcome, Ok):
                continue
            if name == WAIT_TOOL:
                self.send(Resume(event=arguments["event"], payload=outcome.result))
            elif name == HUMAN_TOOL:
                # By the step's memo key: its name alone is ambiguous in a foreach.
                key = parse_call_id(call.call.call_id).key
                self.send(Resume(call_id=key, payload=outcome.result))

    def _run_calls(self, calls: list[ToolCall]) -> None:
        for call in self.order(calls):
            arguments = json.loads(call.arguments or "{}")
            if call.name in (SLEEP_TOOL, WAIT_TOOL, HUMAN_TOOL, BREAKPOINT_TOOL):
                due = arguments.get("due_at")
                due_at = dt.datetime.fromisoformat(due) if due else None
                self.add(ToolCallWaiting(call_id=call.call_id, due_at=due_at))
                continue
            outcome = self.script(call.call_id, call.name, arguments)
            if isinstance(outcome, Crash):
                if call.call_id not in self.crashed:
                    self.crashed.add(call.call_id)
                    self.new_attempt()
                    return
                outcome = Ok({"call": call.call_id, "after_crash": True})
            if call.name.startswith(("agent:", "workflow:")):
                child = f"{self.run_id}-{call.call_id}"
                self.add(ChildStarted(call_id=call.call_id, child_run_id=child))
                self.children[call.call_id] = outcome
                if not isinstance(outcome, Late):
                    status = "completed" if isinstance(outcome, Ok) else "failed"
                    ended = ChildEnded(child_run_id=child, call_id=call.call_id, status=status)
                    self.send(ended, key=f"child:{child}")
                continue
            match outcome:
                case Ok(result=result):
                    self.add(ToolCallFinished(call_id=call.call_id, result=result))
                case Fail(reason=reason, error=error):
                    self.add(ToolCallFailed(call_id=call.call_id, reason=reason, error=error))
                case Unknown():
                    self.add(ToolCallSettled(call_id=call.call_id, note="its tool could not tell"))
                case _:
                    raise AssertionError(f"a tool call cannot end {outcome!r}")

    def _collect(self, call_id: str) -> None:
        outcome = self.children[call_id]
        child = f"{self.run_id}-{call_id}"
        if isinstance(outcome, Ok):
            self.add(ChildFinished(call_id=call_id, child_run_id=child, status="completed"))
            self.add(ToolCallFinished(call_id=call_id, result=outcome.result))
        else:
            reason: ToolFailureReason = outcome.reason if isinstance(outcome, Fail) else "error"
            status = "cancelled" if reason == "cancelled" else "failed"
            self.add(ChildFinished(call_id=call_id, child_run_id=child, status=status))
            self.add(ToolCallFailed(call_id=call_id, reason=reason, error=f"the child {status}"))


def simulate(spec: WorkflowSpec, input: JsonValue = None, **options: Any) -> Simulation:
    """Run a simulation to its end; the simulation (its `records`, `state`) is returned."""
    simulation = Simulation(spec, input, **options)
    simulation.run()
    return simulation


def plans(records: list[Record]) -> list[str]:
    """Each `StepsPlanned` of a log, as JSON text, in order."""
    return [r.body.model_dump_json() for r in records if r.body.type == "steps_planned"]


def call_ids(records: list[Record]) -> list[str]:
    """Every call planned, in order."""
    out: list[str] = []
    for record in records:
        if record.body.type == "steps_planned":
            out.extend(call.call_id for call in record.body.calls)
    return out


def settled(records: list[Record]) -> dict[str, tuple[str, JsonValue]]:
    """Every step settled by the planner: key -> (status, output or failure kind)."""
    out: dict[str, tuple[str, JsonValue]] = {}
    for record in records:
        body = record.body
        if body.type != "steps_planned":
            continue
        for event in body.events:
            if event.type == "settled":
                value = event.failure.kind if event.failure is not None else event.output
                out[event.key] = (event.status, value)
            elif event.type == "state_set":
                out[event.key] = ("completed", event.values)
    return out


def step_key(call_id: str) -> str:
    """The step a call belongs to."""
    return parse_call_id(call_id).key
