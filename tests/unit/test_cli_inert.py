"""Log strings on a terminal: `inert`, and every view `psych inspect` and `psych runs` draw.

The views are rendered by a real rich console, in plain text and in colour, from records,
statuses, reports and run rows that carry the hostile corpus in every string field. The same
corpus goes through the real command, as a process, in tests/integration/test_cli_inspect.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import io
import json
from decimal import Decimal

import pytest
from rich.console import Console, RenderableType

import psych_runtime as pr
from psych_cli._inert import LIMIT, inert
from psych_cli._render import header, record_line, report_view, runs_table, short
from tests._hostile_strings import HOSTILE, HUGE, PIECES, assert_inert, assert_shows_every_piece

AT = dt.datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
H = HOSTILE


# -- inert -----------------------------------------------------------------------------------


@pytest.mark.parametrize("piece", list(PIECES.values()), ids=list(PIECES))
def test_no_piece_of_the_corpus_survives(piece: str) -> None:
    shown = inert(piece)
    assert_inert(shown.encode())
    assert inert(shown) == shown, "inert text stays as it is"


def test_each_character_is_replaced_by_the_escape_that_names_it() -> None:
    assert inert("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert inert("\x9b\x85\x00\x7f") == "\\x9b\\x85\\x00\\x7f"
    assert inert("\u202eevil\u2066") == "\\u202eevil\\u2066"
    assert inert("\U000e0041") == "\\U000e0041"
    assert inert("\ud800") == "\\ud800", "a lone surrogate could not even be written out"
    assert inert("\ufeff\u00ad\u2028") == "\\ufeff\\xad\\u2028"


def test_newlines_and_tabs_are_kept_only_when_the_caller_shows_lines() -> None:
    assert inert("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert inert("a\nb\tc\rd", lines=True) == "a\nb\tc\\rd"


def test_text_in_any_script_is_shown_as_it_is() -> None:
    text = "Grüße, 東京, مرحبا, नमस्ते, پی‌اچ‌دی, 👩‍👩‍👧 and a\u00a0non-breaking space"
    assert inert(text) == text


def test_a_long_string_is_cut_with_a_marker_saying_how_much() -> None:
    assert inert("x" * 10, limit=4) == "xxxx … (6 more characters)"
    assert inert("x" * 4, limit=4) == "xxxx"
    shown = inert(HUGE)
    assert shown == "H" * LIMIT + f" … ({len(HUGE) - LIMIT:,} more characters)"


def test_short_is_one_inert_line_of_a_json_value() -> None:
    assert short({"text": "a\u202eb"}, 80) == '{"text": "a\\u202eb"}'
    assert short("line one\nline two", 80) == "line one\\nline two"
    assert short("x" * 100, 60) == "x" * 60 + " … (40 more characters)"


# -- every view, on a real console -----------------------------------------------------------


@functools.cache
def _records() -> list[pr.records.Record]:
    call = pr.ports.ToolCall(call_id="1.0", name=H, arguments=json.dumps({"q": H}))
    bodies: list[pr.records.Body] = [
        pr.records.RunAdmitted(
            agent=H,
            spec_version=H,
            input=H + HUGE,
            scope=pr.Scope(tenant=H),
            parent_run_id=H,
            parent_call_id=H,
        ),
        pr.records.AttemptStarted(worker_id=H),
        pr.records.ModelCallFinished(
            model=H,
            text=H + HUGE,
            tool_calls=(call,),
            usage=pr.Usage(),
            usage_source="provider",
            cost=pr.Cost(amount=Decimal("0.01"), currency=H, source="provider"),
            finish_reason=H,
        ),
        pr.records.ModelCallFailed(model=H, error=H + HUGE, status=500),
        pr.records.ToolCallStarted(call_id=H, name=H),
        pr.records.ToolCallFinished(call_id=H, result={"text": H, "huge": HUGE}),
        pr.records.ToolCallFailed(call_id=H, reason="error", error=H + HUGE),
        pr.records.ToolCallSettled(call_id=H, note=H),
        pr.records.ToolCallWaiting(call_id=H, note=H),
        pr.records.ApprovalRequested(call_id=H, rule=H),
        pr.records.ApprovalDecided(
            number=1, call_id=H, approved=True, by=H, note=H, arguments={H: H}
        ),
        pr.records.SignalReceived(number=2, key=H, signal=pr.records.UserInput(text=H)),
        pr.records.SignalIgnored(number=3, key=H, reason=H),
        pr.records.RunSuspended(reason="approval", calls=(H, H)),
        pr.records.ChildStarted(call_id=H, child_run_id=H),
        pr.records.ChildFinished(call_id=H, child_run_id=H, status=H),
        pr.records.RunFailed(reason=H, error=H + HUGE),
        pr.records.RunCancelled(reason=H),
        pr.records.Offloaded(body_type=H, tenant=H, blob=H, size=1),
    ]
    return [
        pr.records.Record(run_id=H, seq=seq, attempt=1, at=AT, body=body)
        for seq, body in enumerate(bodies)
    ]


def _status() -> pr.RunStatus:
    return pr.RunStatus(
        run_id=H,
        agent=H,
        status="waiting",
        waiting="approval",
        waiting_for=(H, H),
        turns=1,
        model_calls=1,
        tool_calls=1,
        attempt=1,
        last_seq=3,
        failure_reason=H,
        error=H + HUGE,
    )


def _report() -> pr.Report:
    cost = pr.Cost(amount=Decimal("0.01"), currency=H, source="provider")
    totals = pr.Totals(usage_sources={"provider": 1}, cost=cost)
    calls = (
        pr.ToolCallReport(
            call_id=H, name=H, arguments={"q": H}, outcome="succeeded", result=H + HUGE
        ),
        pr.ToolCallReport(
            call_id=H,
            name=H,
            arguments=H,
            outcome="failed",
            error=H + HUGE,
            approved=False,
            decided_by=H,
        ),
    )
    return pr.Report(
        run_id=H,
        agent=H,
        spec_version=H,
        status="failed",
        failure_reason=H,
        error=H + HUGE,
        output=H + HUGE,
        turns=1,
        model_calls=1,
        tool_calls=calls,
        totals=totals,
        own_totals=totals,
        children=(H, H),
        attempts=1,
        started_at=AT,
        ended_at=AT,
    )


def _rows() -> tuple[pr.ports.RunRow, ...]:
    row = pr.ports.RunRow(
        run_id=H,
        tenant=H,
        agent=H,
        spec_version=H,
        status="waiting",
        waiting="approval",
        parent_run_id=H,
        attempt=1,
        lease_owner=H,
        lease_expires_at=None,
        runnable_at=None,
        next_seq=1,
        inbox_last=0,
        created_at=AT,
        updated_at=AT,
    )
    return (row, row)


@functools.cache
def _views() -> list[RenderableType]:
    return [
        header(_status(), tenant=H, store=H),
        *(record_line(record) for record in _records()),
        report_view(_report()),
        runs_table(_rows()),
    ]


def _render(views: list[RenderableType], *, colour: bool) -> bytes:
    # The console the command uses for logs: soft-wrapped, no markup, no emoji codes.
    out = io.StringIO()
    console = Console(
        file=out,
        width=160,
        soft_wrap=True,
        highlight=False,
        markup=False,
        emoji=False,
        force_terminal=colour,
        color_system="truecolor" if colour else None,
    )
    for view in views:
        console.print(view)
    return out.getvalue().encode("utf-8")


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
def test_every_view_shows_every_log_string_inert(colour: bool) -> None:
    raw = _render(_views(), colour=colour)
    assert_inert(raw, colour=colour)
    if not colour:
        assert_shows_every_piece(raw.decode())


# The views of _views(), in order: named here so that collecting the tests builds no corpus.
VIEWS = [
    "header",
    "run_admitted",
    "attempt_started",
    "model_call_finished",
    "model_call_failed",
    "tool_call_started",
    "tool_call_finished",
    "tool_call_failed",
    "tool_call_settled",
    "tool_call_waiting",
    "approval_requested",
    "approval_decided",
    "signal_received",
    "signal_ignored",
    "run_suspended",
    "child_started",
    "child_finished",
    "run_failed",
    "run_cancelled",
    "offloaded",
    "report",
    "runs",
]


def test_the_views_are_named_in_order() -> None:
    assert ["header", *(record.body.type for record in _records()), "report", "runs"] == VIEWS


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_alone_is_inert_and_bounded(view: str) -> None:
    # One view at a time, so a failure names the view (and so the record type) at fault.
    raw = _render([_views()[VIEWS.index(view)]], colour=False)
    assert_inert(raw, max_bytes=20_000)
    assert "\\x1b" in raw.decode()


def test_rich_markup_in_a_log_string_is_printed_literally() -> None:
    # Even on a console that parses markup (rich's default), the views hold none to parse.
    markup = "[red]a[/] :warning: [link=x]b[/link]"
    record = pr.records.Record(
        run_id="r1",
        seq=0,
        attempt=1,
        at=AT,
        body=pr.records.RunFailed(reason="error", error=markup),
    )
    row = dataclasses.replace(_rows()[0], run_id="r1", agent=markup)
    for view in (record_line(record), runs_table((row,))):
        out = io.StringIO()
        Console(file=out, width=200, force_terminal=True, color_system="truecolor").print(view)
        assert markup in out.getvalue()
        assert "\x1b]8;" not in out.getvalue(), "no hyperlink was made"
