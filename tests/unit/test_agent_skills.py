"""Agent skills loaded on demand: an on-demand skill is listed in the system prompt by name and
description, the model reads it with the built-in ``load_skill`` tool, the body it read is
the call's result in the log; links between skills are checked when the spec is built."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

import psych_runtime
from psych_runtime import (
    AgentSpec,
    AgentTool,
    CodeTool,
    MemoryStore,
    ModelRef,
    Runtime,
    Scope,
    Skill,
    Worker,
)
from psych_runtime.conversations import LOAD_SKILL_TOOL
from psych_runtime.ports import ModelRequest, ModelResponse, ToolResultMessage
from psych_runtime.records import ToolCallFailed, ToolCallFinished, ToolCallStarted
from psych_runtime.runtime._children import child_run_id
from psych_runtime.runtime._execute_state import spec_from_json
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.tools import ToolRegistry

SCOPE = Scope(tenant="acme")
MODEL = ModelRef(model="fake")

REFUNDS = Skill(
    name="refunds",
    description="How to refund an order",
    instructions="Refund within 30 days of delivery. For damaged goods see [damage](skill:damage).",
    on_demand=True,
)
DAMAGE = Skill(
    name="damage",
    description="What to do when goods arrive damaged",
    instructions="Ask for a photo, then replace the item.",
    on_demand=True,
)
TONE = Skill(name="tone", instructions="Be brief and kind.")
SPEC = AgentSpec(
    name="support",
    instructions="Help customers.",
    model=MODEL,
    skills=(TONE, REFUNDS, DAMAGE),
)

# A spec without on-demand skills, and its canonical JSON, version and prompt as computed
# before on-demand skills existed: a stored spec of that form must keep all three.
BEFORE = AgentSpec(
    name="support",
    instructions="Help customers.",
    model=MODEL,
    skills=(
        Skill(name="refunds", description="Refund rules", instructions="Refund within 30 days."),
        Skill(name="tone", instructions="Be kind. See [refunds](skill:refunds)."),
    ),
)
BEFORE_JSON = (
    '{"instructions":"Help customers.","model":{"model":"fake"},"name":"support","skills":['
    '{"description":"Refund rules","instructions":"Refund within 30 days.","name":"refunds"},'
    '{"instructions":"Be kind. See [refunds](skill:refunds).","name":"tone"}]}'
)
BEFORE_VERSION = "sha256:a4996e9fb4962f9ad2268e1d61521de07b434beaea24e571e3674a1cc473ff37"
BEFORE_PROMPT = (
    "Help customers.\n\n## refunds\nRefund within 30 days.\n\n"
    "## tone\nBe kind. See [refunds](skill:refunds)."
)


def spec_with(*skills: Skill, **fields: object) -> AgentSpec:
    return AgentSpec(name="support", model=MODEL, skills=skills, **fields)


def offered(spec: AgentSpec, allowed: tuple[str, ...] | None = None) -> list[str]:
    return list(ToolRegistry().resolve(spec, allowed=allowed))


# --- the system prompt ---------------------------------------------------------------------


def test_on_demand_skills_are_listed_by_name_and_description_not_inlined() -> None:
    assert SPEC.system_prompt == (
        "Help customers.\n\n"
        "## tone\nBe brief and kind.\n\n"
        "## Skills you can load\n"
        "Before following one of these skills, call `load_skill` with its name to read it.\n"
        "- refunds: How to refund an order\n"
        "- damage: What to do when goods arrive damaged"
    )
    assert REFUNDS.instructions not in SPEC.system_prompt
    assert DAMAGE.instructions not in SPEC.system_prompt


def test_a_spec_without_on_demand_skills_keeps_its_json_version_and_prompt() -> None:
    assert BEFORE.canonical_json() == BEFORE_JSON
    assert BEFORE.version == BEFORE_VERSION
    assert BEFORE.system_prompt == BEFORE_PROMPT
    stored = spec_from_json(BEFORE_JSON)
    assert stored == BEFORE and stored.version == BEFORE_VERSION


# --- the version ---------------------------------------------------------------------------


def test_an_on_demand_skills_body_and_flag_are_part_of_the_version() -> None:
    edited = REFUNDS.model_copy(update={"instructions": "Refund within 14 days."})
    changed = SPEC.model_copy(update={"skills": (TONE, edited, DAMAGE)})
    # The prompt is the same (the body is not in it), the version is not.
    assert changed.system_prompt == SPEC.system_prompt
    assert changed.version != SPEC.version
    inline = SPEC.model_copy(
        update={"skills": (TONE, REFUNDS.model_copy(update={"on_demand": False}), DAMAGE)}
    )
    assert inline.version != SPEC.version
    assert '"on_demand":true' in SPEC.canonical_json()
    assert AgentSpec.model_validate_json(SPEC.model_dump_json()).version == SPEC.version


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("skill", "why"),
    [
        (Skill(name="Refunds", description="d", instructions="i", on_demand=True), "lowercase"),
        (Skill(name="refund rules", description="d", instructions="i", on_demand=True), "'-'"),
        (Skill(name="r" * 65, description="d", instructions="i", on_demand=True), "1 to 64"),
        (Skill(name="refunds", instructions="i", on_demand=True), "needs a description"),
        (Skill(name="refunds", description="  ", instructions="i", on_demand=True), "description"),
    ],
)
def test_an_on_demand_skill_needs_a_slug_name_and_a_description(skill: Skill, why: str) -> None:
    with pytest.raises(ValidationError, match=f"AgentSpec 'support' skill {skill.name!r}") as e:
        spec_with(skill)
    assert why in str(e.value)


def test_an_on_demand_skills_name_is_unique_among_all_the_skills() -> None:
    with pytest.raises(ValidationError, match="skill 'refunds' is on demand, so no other skill"):
        spec_with(Skill(name="refunds", instructions="inline"), REFUNDS)
    with pytest.raises(ValidationError, match="skill 'refunds' is on demand, so no other skill"):
        spec_with(REFUNDS, REFUNDS.model_copy(update={"description": "again"}))


def test_inline_skills_are_not_held_to_the_on_demand_rules() -> None:
    # Specs that validated before on-demand skills existed still do.
    spec = spec_with(
        Skill(name="Tone Rules", instructions="a"),
        Skill(name="Tone Rules", instructions="b"),
    )
    assert spec.system_prompt == "## Tone Rules\na\n\n## Tone Rules\nb"


def test_a_spec_with_on_demand_skills_may_not_have_its_own_load_skill_tool() -> None:
    with pytest.raises(ValidationError, match="has on-demand skills, whose built-in tool"):
        spec_with(REFUNDS, DAMAGE, tools=[CodeTool(name="load_skill")])
    # Without on-demand skills the name is free, as it was.
    assert spec_with(TONE, tools=[CodeTool(name="load_skill")]).tool("load_skill") is not None


# --- links ---------------------------------------------------------------------------------


def test_a_link_to_a_missing_skill_is_refused_naming_spec_skill_and_name() -> None:
    broken = REFUNDS.model_copy(update={"instructions": "See [returns](skill:returns)."})
    with pytest.raises(ValidationError) as caught:
        spec_with(broken, DAMAGE)
    assert (
        "AgentSpec 'support' skill 'refunds' links to skill 'returns', which the spec does "
        "not have (its skills: 'refunds', 'damage')"
    ) in str(caught.value)


def test_links_are_checked_in_inline_skills_too_and_may_name_any_skill() -> None:
    with pytest.raises(ValidationError, match="skill 'tone' links to skill 'manners'"):
        spec_with(Skill(name="tone", instructions="Follow [manners](skill:manners)."))
    tone = Skill(name="tone", instructions="Then [refunds](skill:refunds), [tone](skill:tone).")
    assert spec_with(tone, REFUNDS, DAMAGE).skills[0] == tone


def test_only_markdown_links_to_skill_targets_are_checked() -> None:
    text = (
        "Say skill:anything freely, write [a link](https://example.com/skill:x), "
        "(skill:nothing) or [brackets] (skill:spaced)."
    )
    assert spec_with(Skill(name="tone", instructions=text)).skills[0].instructions == text


def test_a_stored_spec_is_not_refused_for_a_link_but_a_built_one_is() -> None:
    text = json.dumps(
        {
            "name": "old",
            "model": {"model": "fake"},
            "skills": [{"name": "tone", "instructions": "See [x](skill:missing)."}],
        }
    )
    with pytest.raises(ValidationError, match="links to skill 'missing'"):
        AgentSpec.model_validate_json(text)
    stored = spec_from_json(text)
    assert isinstance(stored, AgentSpec) and stored.skills[0].name == "tone"


# --- the tool ------------------------------------------------------------------------------


def test_load_skill_is_offered_only_with_on_demand_skills() -> None:
    assert LOAD_SKILL_TOOL == "load_skill"
    assert offered(spec_with(TONE)) == []
    assert offered(SPEC) == ["load_skill"]
    (tool,) = ToolRegistry().resolve(SPEC).values()
    definition = tool.definition()
    assert definition.parameters["properties"] == {
        "name": {
            "type": "string",
            "enum": ["refunds", "damage"],
            "description": "the skill's name, as listed in your instructions",
        }
    }
    assert tool.ref.safe_to_retry and tool.ref.requires_approval is False
    # A child run reads its own spec: the parent's tools do not narrow it away.
    assert offered(SPEC, allowed=()) == ["load_skill"]


# --- runs ----------------------------------------------------------------------------------


def results(model: FakeModel, turn: int) -> list[ToolResultMessage]:
    return [m for m in model.requests[turn].messages if isinstance(m, ToolResultMessage)]


async def test_the_model_loads_a_skill_and_reads_its_body_on_the_next_call() -> None:
    model = (
        FakeModel()
        .turn(tool_calls=[("load_skill", {"name": "refunds"})])
        .turn(text="Refunded: you are within 30 days.")
    )
    async with psych_runtime.session(model, scope=SCOPE) as s:
        view = await s.ask(SPEC, "Can I get a refund for order A1?")
        records = await psych_runtime.read_log(s.store, view.run_id)
        report = await psych_runtime.report(s.store, view.run_id)
    assert view.status == "completed" and view.text == "Refunded: you are within 30 days."
    first = model.requests[0]
    assert [t.name for t in first.tools] == ["load_skill"]
    assert "- refunds: How to refund an order" in first.instructions
    assert REFUNDS.instructions not in first.instructions
    (loaded,) = results(model, 1)
    assert loaded.content == f"## refunds\n{REFUNDS.instructions}" and not loaded.is_error
    # The log says which skill the model read, and what it read.
    (started,) = [r.body for r in records if isinstance(r.body, ToolCallStarted)]
    (finished,) = [r.body for r in records if isinstance(r.body, ToolCallFinished)]
    assert started.name == "load_skill" and finished.call_id == started.call_id
    assert finished.result == f"## refunds\n{REFUNDS.instructions}"
    (call,) = report.tool_calls
    assert (call.name, call.arguments, call.outcome) == (
        "load_skill",
        {"name": "refunds"},
        "succeeded",
    )


async def test_loading_a_skill_that_cannot_be_loaded_is_a_failed_call_listing_those_that_can() -> (
    None
):
    model = (
        FakeModel()
        .turn(tool_calls=[("load_skill", {"name": "returns"}), ("load_skill", {"name": "tone"})])
        .turn(text="I will answer without it.")
    )
    async with psych_runtime.session(model, scope=SCOPE) as s:
        view = await s.ask(SPEC, "go")
        records = await psych_runtime.read_log(s.store, view.run_id)
    assert view.status == "completed"
    unknown, inline = [r.body for r in records if isinstance(r.body, ToolCallFailed)]
    assert unknown.reason == inline.reason == "invalid_arguments"
    assert unknown.error == (
        "invalid arguments for tool 'load_skill': skill 'returns' is not a skill of agent "
        "'support'; the skills you can load: 'refunds', 'damage'"
    )
    assert "skill 'tone' is already in your instructions" in inline.error
    assert all(result.is_error for result in results(model, 1))


class ByModel:
    """Routes each request to the FakeModel scripted for its model name."""

    def __init__(self, **models: FakeModel) -> None:
        self.models = models

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.models[request.model.model].complete(request)


async def test_a_subagent_loads_its_own_skills_when_its_parent_has_none() -> None:
    store = MemoryStore()
    scoped = store.scoped(SCOPE)
    child = SPEC.model_copy(update={"model": ModelRef(model="child")})
    parent = AgentSpec(
        name="front", model=ModelRef(model="parent"), tools=[AgentTool(name="ask", spec=child)]
    )
    parent_model = FakeModel().turn(tool_calls=[("ask", {"input": "refund A1?"})]).turn(text="ok")
    child_model = (
        FakeModel().turn(tool_calls=[("load_skill", {"name": "damage"})]).turn(text="Replace.")
    )
    run_id = await psych_runtime.dispatch(scoped, parent, "help")
    await Worker(
        store, Runtime(model=ByModel(parent=parent_model, child=child_model)), concurrency=2
    ).run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"
    assert [t.name for t in parent_model.requests[0].tools] == ["ask"]
    (loaded,) = results(child_model, 1)
    assert loaded.content == f"## damage\n{DAMAGE.instructions}"
    report = await psych_runtime.report(scoped, child_run_id(run_id, "2.0"))
    assert [(c.name, c.result) for c in report.tool_calls] == [("load_skill", loaded.content)]
