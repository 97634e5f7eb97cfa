"""The telemetry conformance suite: one abstract pytest class every `Telemetry` adapter passes.

Certify an adapter by saying how to make it and how to read back what it emitted::

    from psych_runtime.testing.telemetry_contract import EmittedSpan, TelemetryContract


    class TestMyTelemetry(TelemetryContract):
        def make_telemetry(self, *, capture_content: bool) -> MyTelemetry:
            ...  # fresh: nothing emitted yet

        def emitted(self) -> list[EmittedSpan]:
            ...  # every span it emitted so far, read back from its backend or a test exporter

The suite runs real runs in a `session` (a scripted `FakeModel`, tools that finish, fail,
cannot know their outcome, wait, or need an approval; a subagent; a model that fails) and
checks what the adapter emitted against the log of each run:

- every record maps to what `TRACE_MAP` declares: a span (``chat``, ``execute_tool``, the
  run's ``invoke_agent``) with the id `span_id_of` derives, or an event of the run's span;
- one trace per run and one root, every other span under a span of the trace (a child run's
  under the tool call that started it), names ``"{operation} {subject}"``;
- each span carries `REQUIRED_ATTRIBUTES` for its operation, with the values the log holds;
- content (`CONTENT_ATTRIBUTES`) only when the adapter was made with ``capture_content``,
  and no secret value in any attribute or event, content included.

Its tests are coroutines: run it with pytest and pytest-asyncio (the ``psych-runtime[testing]``
extra), in asyncio's auto mode or with the class marked ``pytest.mark.asyncio``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psych_core import (
    CONTENT_ATTRIBUTES,
    REQUIRED_ATTRIBUTES,
    TRACE_MAP,
    AgentSpec,
    AgentTool,
    ApprovalDecided,
    CodeTool,
    ModelError,
    ModelRef,
    Record,
    RunAdmitted,
    Telemetry,
    ToolCallFailed,
    ToolCallFinished,
    ToolCallSettled,
    parse_traceparent,
    run_trace_id,
    span_id_of,
)
from psych_runtime._surface._session import session
from psych_runtime._surface._signals import approve, resume
from psych_runtime.adapters import EnvSecretResolver
from psych_runtime.runtime import Runtime, Worker
from psych_runtime.testing.fake_model import FakeModel
from psych_runtime.tools import ToolRaised, WaitFor

SECRET = "sk-live-4242-never-in-telemetry"
"""A secret value the suite's runs see: in the input, a tool's result and a model reply."""


@dataclass(frozen=True, slots=True)
class EmittedSpan:
    """A span as the adapter's backend holds it, in the suite's terms.

    Attributes:
        name: the span's name.
        trace_id: 128-bit trace id; span_id: 64-bit span id.
        parent_id: the parent span's id; None for a trace's root.
        start_ns, end_ns: times in nanoseconds since the epoch.
        attributes: the span's attributes.
        events: each event's name and attributes, in order.
        error: whether the span ended with an error status.
    """

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    events: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    error: bool = False


async def search(query: str) -> dict[str, str]:
    """Search the catalogue."""
    return {"query": query, "hit": f"found with {SECRET}"}


async def broken(query: str) -> str:
    """A tool that fails."""
    raise ToolRaised(f"no index for {query}")


async def charge(amount: int) -> str:
    """A payment that outlives its timeout: its outcome cannot be known."""
    await asyncio.sleep(30)
    return f"charged {amount}"


async def wait_for_shipment(order: str) -> WaitFor:
    """Wait until the warehouse says the order shipped."""
    return WaitFor(note=f"waiting for {order}")


async def refund(amount: int) -> str:
    """Refund an amount (needs approval)."""
    return f"refunded {amount}"


_TOOLS = (
    CodeTool(name="search"),
    CodeTool(name="broken", safe_to_retry=True),
    CodeTool(name="charge", timeout=0.05),
    CodeTool(name="wait_for_shipment"),
    CodeTool(name="refund", requires_approval=True),
)
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "search": search,
    "broken": broken,
    "charge": charge,
    "wait_for_shipment": wait_for_shipment,
    "refund": refund,
}


def _spec(name: str, tools: Sequence[Any] = _TOOLS) -> AgentSpec:
    return AgentSpec(
        name=name,
        instructions="Help the customer.",
        model=ModelRef(model="fake-standard"),
        tools=tuple(tools),
    )


class TelemetryContract:
    """The checks every `Telemetry` adapter passes (see the module's docstring)."""

    def make_telemetry(self, *, capture_content: bool) -> Telemetry:
        """A fresh adapter; `capture_content` as the application would choose it."""
        raise NotImplementedError

    def emitted(self) -> list[EmittedSpan]:
        """Every span the adapter made by `make_telemetry` emitted so far."""
        raise NotImplementedError

    # -- runs -------------------------------------------------------------------------------

    async def _tool_run(self, *, capture_content: bool = False) -> list[Record]:
        """One run whose calls finish, fail, end unknown, and wait until resumed."""
        model = (
            FakeModel()
            .turn(
                text=f"Looking, key {SECRET}.",
                tool_calls=[
                    ("search", {"query": "lamps"}),
                    ("broken", {"query": "lamps"}),
                    ("charge", {"amount": 5}),
                ],
            )
            .turn(tool_calls=[("wait_for_shipment", {"order": "A1"})])
            .turn(text="All done.")
        )
        runtime = self._runtime(model, capture_content=capture_content)
        async with session(runtime=runtime) as s:
            view = await s.ask(_spec("shop"), f"find lamps, my key is {SECRET}")
            assert view.status == "waiting", view
            await resume(s.store, view.run_id, {"shipped": True})
            view = await s.drive(view.run_id)
            assert view.status == "completed", view
            return await s.store.read(view.run_id)

    async def _approval_run(self) -> list[Record]:
        model = FakeModel().turn(tool_calls=[("refund", {"amount": 3})]).turn(text="Refunded.")
        async with session(runtime=self._runtime(model)) as s:
            view = await s.ask(_spec("refunds"), "refund me")
            assert view.status == "waiting", view
            pending = [record.body for record in await s.store.read(view.run_id)]
            call_id = next(b.call_id for b in pending if b.type == "approval_requested")
            await approve(s.store, view.run_id, call_id, by="ops@example.com")
            view = await s.drive(view.run_id)
            assert view.status == "completed", view
            return await s.store.read(view.run_id)

    async def _child_run(self) -> tuple[list[Record], list[Record]]:
        """A run whose subagent's child run a worker runs, then the parent resumes."""
        helper = _spec("helper", tools=(CodeTool(name="search"),))
        parent = _spec("lead", tools=(AgentTool(name="ask_helper", spec=helper),))
        model = (
            FakeModel()
            .turn(tool_calls=[("ask_helper", {"input": "find lamps"})])
            .turn(tool_calls=[("search", {"query": "lamps"})])
            .turn(text="Lamps found.")
            .turn(text="The helper found lamps.")
        )
        async with session(runtime=self._runtime(model)) as s:
            view = await s.ask(parent, "find lamps")
            worker = Worker(s.store.store, s.runtime, poll_interval=0.01)
            await worker.run_until_idle()
            records = await s.store.read(view.run_id)
            assert records[-1].body.type == "run_completed", records[-1]
            child_id = next(r.body.child_run_id for r in records if r.body.type == "child_started")
            return records, await s.store.read(child_id)

    async def _failed_run(self) -> list[Record]:
        model = FakeModel().fail(ModelError("the provider is down", model="fake-standard"))
        async with session(runtime=self._runtime(model)) as s:
            view = await s.ask(_spec("fragile"), "hello")
            assert view.status == "failed", view
            return await s.store.read(view.run_id)

    def _runtime(self, model: FakeModel, *, capture_content: bool = False) -> Runtime:
        functions = list(_FUNCTIONS.values())
        secrets = EnvSecretResolver(["SHOP_KEY"], environ={"SHOP_KEY": SECRET})
        self._telemetry = self.make_telemetry(capture_content=capture_content)
        return Runtime(model=model, tools=functions, secrets=secrets, telemetry=self._telemetry)

    # -- checks -----------------------------------------------------------------------------

    def _of_run(self, records: Sequence[Record]) -> list[EmittedSpan]:
        run_id = records[0].run_id
        return [span for span in self.emitted() if span.attributes.get("psych.run.id") == run_id]

    def _check_log(self, records: Sequence[Record]) -> EmittedSpan:
        """Every record maps to what TRACE_MAP declares; returns the run's own span."""
        run_id = records[0].run_id
        spans = {span.span_id: span for span in self._of_run(records)}
        root = spans.get(span_id_of(run_id, "run"))
        assert root is not None, f"run {run_id}: its own span was not emitted"
        event_names = [name for name, _ in root.events]
        for record in records:
            declared = TRACE_MAP[record.body.type]
            where = f"run {run_id}, seq {record.seq} ({record.body.type})"
            if declared.startswith("event "):
                assert declared.split()[1] in event_names, f"{where}: no event {declared}"
            elif declared == "span chat":
                span = spans.get(span_id_of(run_id, f"seq:{record.seq}"))
                assert span is not None, f"{where}: no chat span"
                assert span.name.startswith("chat "), f"{where}: {span.name!r}"
            elif declared == "span execute_tool":
                call_id = getattr(record.body, "call_id", "")
                span = spans.get(span_id_of(run_id, f"call:{call_id}"))
                assert span is not None, f"{where}: no execute_tool span"
                assert span.name.startswith("execute_tool "), f"{where}: {span.name!r}"
        return root

    def _check_tree(self, records: Sequence[Record], root: EmittedSpan) -> None:
        run_id = records[0].run_id
        admitted = records[0].body
        assert isinstance(admitted, RunAdmitted)
        trace_id = run_trace_id(run_id, admitted.traceparent)
        caller = parse_traceparent(admitted.traceparent)
        spans = self._of_run(records)
        assert {span.trace_id for span in spans} == {trace_id}, f"run {run_id}: several traces"
        assert root.parent_id == (caller.span_id if caller is not None else None)
        others = [span for span in spans if span.span_id != root.span_id]
        assert [span for span in others if span.parent_id == root.parent_id] == []
        for span in others:
            assert span.parent_id == root.span_id, f"{span.name}: not under the run's span"
            assert root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns, span.name
        for span in spans:
            operation = str(span.attributes.get("gen_ai.operation.name"))
            required = REQUIRED_ATTRIBUTES.get(operation)  # type: ignore[call-overload]
            assert required is not None, f"{span.name}: operation {operation!r}"
            missing = [k for k in required if k not in span.attributes]
            assert missing == [], f"{span.name}: missing {missing}"
            subject = {
                "chat": span.attributes.get("gen_ai.request.model"),
                "execute_tool": span.attributes.get("gen_ai.tool.name"),
            }.get(operation, span.attributes.get("gen_ai.agent.name"))
            assert span.name == f"{operation} {subject}"

    def _check_no_secret(self, spans: Sequence[EmittedSpan]) -> None:
        for span in spans:
            values = [span.name, *map(str, span.attributes.values())]
            values += [str(v) for _, attributes in span.events for v in attributes.values()]
            assert not [v for v in values if SECRET in v], f"{span.name}: a secret leaked"

    # -- the suite --------------------------------------------------------------------------

    async def test_every_record_maps_to_its_span_or_event(self) -> None:
        records = await self._tool_run()
        root = self._check_log(records)
        self._check_tree(records, root)
        assert root.name == "invoke_agent shop"
        assert root.attributes["psych.run.status"] == "completed"

    async def test_tool_outcomes_are_the_logs(self) -> None:
        records = await self._tool_run()
        outcomes = {
            record.body.call_id: record.body
            for record in records
            if isinstance(record.body, ToolCallFinished | ToolCallFailed | ToolCallSettled)
        }
        spans = {span.span_id: span for span in self._of_run(records)}
        expected = {"tool_call_finished": "finished", "tool_call_failed": "failed"}
        for call_id, body in outcomes.items():
            span = spans[span_id_of(records[0].run_id, f"call:{call_id}")]
            outcome = expected.get(body.type, "unknown")
            assert span.attributes["psych.tool.outcome"] == outcome, span.name
            assert span.error == (outcome == "failed"), span.name
        assert "unknown" in {s.attributes.get("psych.tool.outcome") for s in spans.values()}

    async def test_approvals_and_waits_are_events_of_the_run(self) -> None:
        records = await self._approval_run()
        root = self._check_log(records)
        self._check_tree(records, root)
        names = [name for name, _ in root.events]
        for expected in ("psych.approval.requested", "psych.suspended", "psych.approval.decided"):
            assert expected in names, names
        attempts = [attributes for name, attributes in root.events if name == "psych.attempt"]
        assert [a["psych.attempt.after"] for a in attempts] == ["admission", "suspension"]
        decided = next(r for r in records if isinstance(r.body, ApprovalDecided))
        assert root.end_ns >= int(decided.at.timestamp() * 1e6) * 1000

    async def test_a_child_run_is_under_the_call_that_started_it(self) -> None:
        parent, child = await self._child_run()
        self._check_tree(parent, self._check_log(parent))
        child_root = self._check_log(child)
        self._check_tree(child, child_root)
        call_id = next(r.body.call_id for r in parent if r.body.type == "child_started")
        assert child_root.trace_id == run_trace_id(parent[0].run_id, None)
        assert child_root.parent_id == span_id_of(parent[0].run_id, f"call:{call_id}")

    async def test_a_failed_model_call_fails_its_span_and_the_run(self) -> None:
        records = await self._failed_run()
        root = self._check_log(records)
        self._check_tree(records, root)
        assert root.error
        assert root.attributes["psych.run.status"] == "failed"
        chats = [span for span in self._of_run(records) if span.name.startswith("chat ")]
        assert chats
        assert all(span.error for span in chats)

    async def test_content_is_left_out_unless_asked_for(self) -> None:
        records = await self._tool_run()
        for span in self._of_run(records):
            assert CONTENT_ATTRIBUTES.isdisjoint(span.attributes), span.name
        self._check_no_secret(self._of_run(records))

    async def test_content_when_asked_for_is_redacted(self) -> None:
        records = await self._tool_run(capture_content=True)
        spans = self._of_run(records)
        present = {key for span in spans for key in span.attributes}
        assert present >= CONTENT_ATTRIBUTES, CONTENT_ATTRIBUTES - present
        self._check_no_secret(spans)


__all__ = ["SECRET", "EmittedSpan", "TelemetryContract"]
