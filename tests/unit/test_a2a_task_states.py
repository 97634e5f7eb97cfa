"""How a run's log reads as an A2A task: the state table, the status message, the output
artifact, the history, and what a message says. Logs come from real runs in a session (the
model is a scripted `FakeModel`)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from a2a.helpers import get_artifact_text, get_message_text, new_data_part, new_text_part
from a2a.types import Message, Part, Role, TaskState
from a2a.utils.errors import ContentTypeNotSupportedError, InvalidParamsError

import psych_runtime
from psych_core import (
    BREAKPOINT_TOOL,
    HUMAN_TOOL,
    SLEEP_TOOL,
    WAIT_TOOL,
    CallState,
    RunState,
    ToolCall,
)
from psych_runtime import AgentSpec, CodeTool, ModelRef, Skill, WaitFor
from psych_runtime._a2a_serve._messages import message_payload, message_text
from psych_runtime._a2a_serve._tasks import RunTask, state_of, task_of, task_state
from psych_runtime.a2a import agent_card
from psych_runtime.records import Record
from psych_runtime.testing import FakeModel

S = TaskState


def _waiting(reason: str, *tools: str) -> RunState:
    calls = tuple(
        CallState(call=ToolCall(call_id=f"1.{i}", name=name, arguments="{}"), phase="waiting")
        for i, name in enumerate(tools)
    )
    return replace(RunState.empty("r"), status="waiting", waiting=reason, calls=calls)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("queued", S.TASK_STATE_SUBMITTED),
        ("running", S.TASK_STATE_WORKING),
        ("completed", S.TASK_STATE_COMPLETED),
        ("failed", S.TASK_STATE_FAILED),
        ("cancelled", S.TASK_STATE_CANCELED),
    ],
)
def test_a_status_that_waits_for_nothing_maps_one_to_one(status: str, expected: S) -> None:
    state = replace(RunState.empty("r"), status=status)  # type: ignore[arg-type]
    assert task_state(state) == expected


@pytest.mark.parametrize(
    ("reason", "tools", "expected"),
    [
        # A message can answer: a tool's WaitFor, a workflow's human step.
        ("external", ("ask_customer",), S.TASK_STATE_INPUT_REQUIRED),
        ("external", (HUMAN_TOOL,), S.TASK_STATE_INPUT_REQUIRED),
        ("external", (SLEEP_TOOL, HUMAN_TOOL), S.TASK_STATE_INPUT_REQUIRED),
        # A person decides out of band.
        ("approval", (), S.TASK_STATE_AUTH_REQUIRED),
        ("external", (BREAKPOINT_TOOL,), S.TASK_STATE_AUTH_REQUIRED),
        # Nothing the client can give: the run is still at work.
        ("external", (SLEEP_TOOL,), S.TASK_STATE_WORKING),
        ("external", (WAIT_TOOL,), S.TASK_STATE_WORKING),
        ("children", (), S.TASK_STATE_WORKING),
    ],
)
def test_a_waiting_run_maps_by_what_it_waits_for(
    reason: str, tools: tuple[str, ...], expected: S
) -> None:
    assert task_state(_waiting(reason, *tools)) == expected


SPEC = AgentSpec(
    name="support",
    instructions="Answer questions about orders.",
    model=ModelRef(model="gpt-4.1-mini"),
    tools=(CodeTool(name="ask_customer"),),
)


def ask_customer(question: str) -> WaitFor:
    """Ask the customer and wait for the answer."""
    return WaitFor(note=question)


async def _log(spec: AgentSpec, model: FakeModel, text: str) -> list[Record]:
    async with psych_runtime.session(model, tools=[ask_customer]) as s:
        view = await s.ask(spec, text)
        return await psych_runtime.read_log(s.store, view.run_id)


async def test_a_completed_run_has_its_answer_as_the_output_artifact_and_a_history() -> None:
    records = await _log(SPEC, FakeModel().turn(text="Order A1 has shipped."), "Where is A1?")
    task = task_of(RunTask.of(records[0].run_id, records))
    assert (task.id, task.context_id) == (records[0].run_id, records[0].run_id)
    assert task.status.state == S.TASK_STATE_COMPLETED
    [artifact] = task.artifacts
    assert (artifact.artifact_id, get_artifact_text(artifact)) == (
        "output",
        "Order A1 has shipped.",
    )
    said = [(m.role, get_message_text(m)) for m in task.history]
    assert said == [(Role.ROLE_USER, "Where is A1?"), (Role.ROLE_AGENT, "Order A1 has shipped.")]
    assert task.metadata["psych"]["status"] == "completed"
    assert task.status.timestamp.ToDatetime().year >= 2024


async def test_structured_output_is_a_data_artifact() -> None:
    spec = SPEC.model_copy(
        update={"output_type": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    )
    records = await _log(spec, FakeModel().turn(text='{"n": 3}'), "Count.")
    [artifact] = task_of(RunTask.of(records[0].run_id, records, spec)).artifacts
    [part] = artifact.parts
    assert part.HasField("data")
    assert part.data.struct_value.fields["n"].number_value == 3


async def test_a_question_is_the_status_message_of_an_input_required_task() -> None:
    model = FakeModel().turn(tool_calls=[("ask_customer", {"question": "Which order?"})])
    records = await _log(SPEC, model, "Where is my order?")
    task = task_of(RunTask.of(records[0].run_id, records))
    assert task.status.state == S.TASK_STATE_INPUT_REQUIRED
    assert get_message_text(task.status.message) == "Which order?"
    assert task.metadata["psych"]["waiting"] == "external"
    assert list(task.metadata["psych"]["waiting_for"]) == ["2.0"]
    assert not task.artifacts


async def test_a_corrupt_log_reads_failed_with_the_reason() -> None:
    records = await _log(SPEC, FakeModel().turn(text="Done."), "Hi")
    broken = [*records[:2], records[1], *records[2:]]  # a seq repeated
    task = RunTask.of(records[0].run_id, broken)
    assert state_of(task) == S.TASK_STATE_FAILED
    shown = task_of(task)
    assert "seq" in get_message_text(shown.status.message)
    assert shown.metadata["psych"]["failure_reason"] == "corrupt_log"


def _message(*parts: Part) -> Message:
    return Message(message_id="m", role=Role.ROLE_USER, parts=list(parts))


def test_a_message_is_its_text_or_its_data() -> None:
    assert message_payload(_message(new_text_part("A1"), new_text_part("please"))) == "A1\nplease"
    assert message_payload(_message(new_data_part({"order": "A1"}))) == {"order": "A1"}
    both = _message(new_text_part("See:"), new_data_part({"order": "A1"}))
    assert message_payload(both) == 'See:\n{"order": "A1"}'
    assert json.loads(message_text(_message(new_data_part(["a", "b"])))) == ["a", "b"]


def test_a_message_without_content_or_with_a_file_is_refused() -> None:
    with pytest.raises(InvalidParamsError, match="no text or data part"):
        message_payload(_message())
    with pytest.raises(ContentTypeNotSupportedError, match="not files"):
        message_payload(_message(Part(url="https://example.com/a.png")))


def test_the_card_lists_the_spec_and_its_skills() -> None:
    card = agent_card(SPEC, url="https://example.com/a2a")
    assert (card.name, card.description, card.version) == (
        "support",
        "Answer questions about orders.",
        SPEC.version,
    )
    assert [skill.id for skill in card.skills] == ["support"]
    skilled = SPEC.model_copy(
        update={"skills": (Skill(name="refunds", description="Refund", instructions="x"),)}
    )
    card = agent_card(skilled, url="https://example.com/a2a", description="Orders.")
    assert [(s.id, s.description) for s in card.skills] == [("refunds", "Refund")]
    assert card.description == "Orders."
    assert list(card.default_output_modes) == ["text/plain"]


_WITHOUT_SDK = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "a2a":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Blocked())
import psych_runtime
from psych_runtime.a2a import RunRequestHandler, agent_card
for use in (lambda: agent_card(None, url=""), lambda: RunRequestHandler(None, None)):
    try:
        use()
    except ImportError as error:
        print(error)
"""


def test_psych_runtime_imports_without_the_sdk_and_says_what_to_install() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_SDK], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert all('"psych-runtime[a2a]"' in line for line in lines)
