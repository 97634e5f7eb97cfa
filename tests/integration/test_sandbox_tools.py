"""Sandbox tools run in real sandboxes: the subprocess backend, and namespaces where the host
has bubblewrap."""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil

import pytest

import psych_runtime
from psych_runtime import (
    AgentSpec,
    Leases,
    MemoryStore,
    ModelRef,
    Report,
    Runtime,
    SandboxTool,
    Scope,
    SubprocessSandbox,
    ToolCallReport,
    Worker,
)
from psych_runtime.errors import SandboxToolUnavailable
from psych_runtime.ports import GUARANTEES, Sandbox, ToolResultMessage
from psych_runtime.testing.fake_model import FakeModel, ScriptedCall
from psych_runtime.testing.sandbox_faults import failing_setup
from tests.contract._sandbox_hosts import missing

COUNT_WORDS = SandboxTool(
    name="count_words",
    description="Count the words of a text.",
    argv=("python3", "count.py", "{mode}"),
    files={
        "count.py": "import sys\ntext = sys.stdin.read()\nprint(len(text.split()), sys.argv[1])\n"
    },
    stdin="{text}",
    require_level="limited",
)


def spec_of(*tools: SandboxTool) -> AgentSpec:
    return AgentSpec(name="worker-bee", model=ModelRef(model="fake"), tools=tools)


async def run_calls(
    sandbox: Sandbox | None, tools: tuple[SandboxTool, ...], calls: list[ScriptedCall]
) -> tuple[Report, FakeModel]:
    model = FakeModel().turn(tool_calls=calls).turn(text="done")
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=model, sandbox=sandbox)
    ) as s:
        view = await s.ask(spec_of(*tools), "go")
        assert view.status == "completed", view.error
        report = await psych_runtime.report(s.store, view.run_id)
    return report, model


def only(report: Report) -> ToolCallReport:
    [call] = report.tool_calls
    return call


async def test_a_program_runs_with_its_arguments_and_reports_its_isolation() -> None:
    report, model = await run_calls(
        SubprocessSandbox(),
        (COUNT_WORDS,),
        [("count_words", {"text": "one two three", "mode": "words"})],
    )
    call = only(report)
    assert call.outcome == "succeeded"
    assert isinstance(call.result, dict)
    assert call.result["stdout"] == "3 words\n"
    isolation = call.result["isolation"]
    assert isinstance(isolation, dict)
    assert (isolation["backend"], isolation["level"]) == ("subprocess", "limited")
    grades = isolation["grades"]
    assert isinstance(grades, dict) and set(grades) == set(GUARANTEES)
    assert grades["wall_time_limited"] == "enforced"
    assert grades["network_isolated"] == "not_enforced"
    shown = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert '"level":"limited"' in shown[0].content


async def test_a_kernel_sandbox_reaches_the_kernel_level() -> None:
    if shutil.which("bwrap") is None:
        missing("bubblewrap (bwrap) is not installed")
    from psych_sandbox_namespaces import NamespaceSandbox

    tool = SandboxTool(
        name="uname",
        argv=("sh", "-c", "echo {greeting}; cat /etc/hostname 2>/dev/null | wc -c"),
    )
    assert tool.require_level == "kernel", "a sandbox tool requires isolation by default"
    report, _model = await run_calls(NamespaceSandbox(), (tool,), [("uname", {"greeting": "hi"})])
    result = only(report).result
    assert isinstance(result, dict) and isinstance(result["isolation"], dict)
    assert str(result["stdout"]).startswith("hi\n")
    assert result["isolation"]["level"] == "kernel"
    grades = result["isolation"]["grades"]
    assert isinstance(grades, dict) and grades["network_isolated"] == "enforced"


async def test_output_produced_under_weaker_terms_is_withheld_with_the_reason() -> None:
    # The sandbox's CPU limit really fails to be set up: the tool requires it.
    with failing_setup("cpu_time_limited"):
        report, model = await run_calls(
            SubprocessSandbox(), (COUNT_WORDS,), [("count_words", {"text": "a b", "mode": "words"})]
        )
    call = only(report)
    assert (call.outcome, call.reason) == ("failed", "error")
    assert call.error is not None
    assert "output was withheld" in call.error
    assert "cpu_time_limited is not_enforced" in call.error
    shown = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert shown[0].is_error and "withheld" in shown[0].content


async def test_a_failing_program_fails_the_call_with_its_status_and_stderr() -> None:
    tool = SandboxTool(
        name="check",
        argv=("sh", "-c", "echo checking; echo '{what} is broken' >&2; exit 3"),
        require_level="limited",
    )
    report, _model = await run_calls(SubprocessSandbox(), (tool,), [("check", {"what": "disk"})])
    call = only(report)
    assert (call.outcome, call.reason) == ("failed", "error")
    assert call.error is not None
    assert "the program exited with status 3" in call.error
    assert "stderr:\ndisk is broken" in call.error
    assert "stdout:\nchecking" in call.error


async def test_an_argument_stays_one_argument() -> None:
    tool = SandboxTool(
        name="echo_args",
        argv=("python3", "-c", "import sys; print(sys.argv[1:])", "{value}"),
        require_level="limited",
    )
    report, _model = await run_calls(
        SubprocessSandbox(), (tool,), [("echo_args", {"value": "a b; rm -rf / $(x)"})]
    )
    result = only(report).result
    assert isinstance(result, dict)
    assert result["stdout"] == "['a b; rm -rf / $(x)']\n"


@pytest.mark.parametrize(
    ("safe", "outcome", "reason"), [(True, "failed", "timeout"), (False, "unknown", None)]
)
async def test_a_timeout_fails_a_safe_program_and_settles_an_unsafe_one_unknown(
    safe: bool, outcome: str, reason: str | None
) -> None:
    tool = SandboxTool(
        name="sleepy",
        argv=("sleep", "{seconds}"),
        timeout=0.5,
        safe_to_retry=safe,
        require_level="limited",
    )
    report, _model = await run_calls(SubprocessSandbox(), (tool,), [("sleepy", {"seconds": "5"})])
    call = only(report)
    assert (call.outcome, call.reason) == (outcome, reason)


async def test_a_spec_with_a_sandbox_tool_and_no_sandbox_is_refused_before_anything_runs() -> None:
    model = FakeModel().turn(text="never")
    store = MemoryStore()
    async with psych_runtime.session(model, store=store) as s:
        with pytest.raises(SandboxToolUnavailable, match="no sandbox was given"):
            await s.ask(spec_of(COUNT_WORDS), "go")
        assert (await s.store.list_runs()).items == ()
    assert model.requests == []


async def test_a_sandbox_that_cannot_reach_the_required_level_is_refused_up_front() -> None:
    kernel = COUNT_WORDS.model_copy(update={"require_level": "kernel"})
    async with psych_runtime.session(
        runtime=psych_runtime.Runtime(model=FakeModel(), sandbox=SubprocessSandbox())
    ) as s:
        with pytest.raises(SandboxToolUnavailable, match="level 'limited' at most"):
            await s.ask(spec_of(kernel), "go")


async def test_a_worker_without_a_sandbox_leaves_the_run_for_another_worker() -> None:
    store = MemoryStore()
    scoped = store.scoped(Scope(tenant="t"))
    run_id = await psych_runtime.dispatch(scoped, spec_of(COUNT_WORDS), "go")
    lacking = Worker(
        store, Runtime(model=FakeModel(), leases=Leases(release_backoff=dt.timedelta(seconds=0.2)))
    )
    await lacking.run_until_idle()
    row = await scoped.run(run_id)
    assert (row.status, row.lease_owner) == ("queued", None), "released, not failed"
    assert (await psych_runtime.status(scoped, run_id)).model_calls == 0
    await asyncio.sleep(0.3)  # the release's backoff
    model = FakeModel().turn(tool_calls=[("count_words", {"text": "x", "mode": "w"})])
    model.turn(text="one word")
    await Worker(store, Runtime(model=model, sandbox=SubprocessSandbox())).run_until_idle()
    assert (await psych_runtime.status(scoped, run_id)).status == "completed"
