"""How a run looks on a terminal: its status line, one line per record, its report.

Everything here is a view of values read from the log; nothing is computed twice. Record
types this version does not know are shown with their fields, never dropped.

Every string here becomes screen text through `text` (or `short`, whose result does), which
makes it inert first: a log string is shown, never obeyed, whatever control sequences or rich
markup it holds. The views are ``Text`` objects, which rich never parses for markup.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from psych_cli._inert import inert
from psych_runtime import Report, RunStatus
from psych_runtime.ports import RunRow
from psych_runtime.records import Record

_STATUS_STYLE = {
    "completed": "bold green",
    "failed": "bold red",
    "cancelled": "bold yellow",
    "waiting": "bold magenta",
    "running": "bold cyan",
    "queued": "bold blue",
}
_TYPE_STYLE = {
    "run_completed": "green",
    "run_failed": "red",
    "run_cancelled": "yellow",
    "tool_call_failed": "red",
    "model_call_failed": "red",
    "tool_call_settled": "yellow",
    "approval_requested": "magenta",
    "run_suspended": "magenta",
}


def text(value: str, style: str = "") -> Text:
    """The one way a string becomes screen text in this module: made inert first."""
    return Text(inert(value), style=style)


def status_text(status: str, waiting: str | None = None) -> Text:
    """``completed``, or ``waiting (approval)``, styled."""
    label = f"{status} ({waiting})" if waiting else status
    return text(label, _STATUS_STYLE.get(status, "bold"))


def plural(count: int, noun: str) -> str:
    """``1 tool call``, ``2 tool calls``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def short(value: Any, width: int = 60) -> str:
    """`value` (JSON when it is not a string) on one line and inert, cut after `width`
    characters with a marker saying how many more there were."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return inert(text, limit=width)


def header(status: RunStatus, *, tenant: str, store: str) -> RenderableType:
    """Who the run is and where it stands, in two lines."""
    first = Text.assemble(
        text("run ", "dim"),
        text(status.run_id, "bold"),
        "  ",
        text(status.agent or "?", "cyan"),
        "  ",
        status_text(status.status, status.waiting),
    )
    second = text(f"tenant {tenant} · store {store} · attempt {status.attempt}", "dim")
    lines: list[RenderableType] = [first, second]
    if status.waiting_for:
        lines.append(text(f"waiting for: {', '.join(status.waiting_for)}", "magenta"))
    if status.error:
        lines.append(text(f"{status.failure_reason or 'error'}: {status.error}", "red"))
    return Group(*lines)


def record_line(record: Record) -> Text:
    """One record as one line: seq, time (UTC), attempt, type, what it says."""
    kind = record.body.type
    line = Text(no_wrap=False)
    line.append(f"{record.seq:>4}  ", style="bold")
    line.append(f"{record.at:%H:%M:%S.%f}"[:-3] + "  ", style="dim")
    line.append(f"a{record.attempt:<3}", style="dim")
    line.append_text(text(f"{kind:<20} ", _TYPE_STYLE.get(kind, "cyan")))
    line.append_text(text(summary(record)))
    line.rstrip()
    return line


def summary(record: Record) -> str:
    """What one record says, in a few words."""
    fields: dict[str, Any] = record.body.model_dump(mode="json", exclude={"type"})
    match record.body.type:
        case "run_admitted":
            text = f"agent {fields['agent']}, input '{short(fields['input'], 50)}'"
            if fields.get("parent_run_id"):
                text += f", child of {fields['parent_run_id']} ({fields['parent_call_id']})"
            if fields.get("continues"):
                carried = len(fields.get("history") or ()) + len(fields.get("queued") or ())
                text += f", continues {fields['continues']} ({carried} messages carried)"
            return text
        case "attempt_started":
            return f"worker {fields['worker_id']}"
        case "model_call_finished":
            return _model_call(fields)
        case "model_call_failed":
            status = f" (HTTP {fields['status']})" if fields.get("status") else ""
            return f"{fields['model']}{status}: {short(fields['error'])}"
        case "tool_call_started":
            return f"{fields['call_id']} {fields['name']}"
        case "tool_call_finished":
            return f"{fields['call_id']} -> {short(fields['result'])}"
        case "tool_call_failed":
            return f"{fields['call_id']} {fields['reason']}: {short(fields['error'])}"
        case "tool_call_settled":
            note = f": {fields['note']}" if fields.get("note") else ""
            return f"{fields['call_id']} outcome {fields['outcome']}{note}"
        case "approval_requested":
            return f"{fields['call_id']} needs approval ({fields['rule']})"
        case "approval_decided":
            verdict = "approved" if fields["approved"] else "denied"
            return f"{fields['call_id']} {verdict} by {fields['by']}"
        case "run_suspended":
            calls = f" on {', '.join(fields['calls'])}" if fields.get("calls") else ""
            due = f" until {fields['due_at']}" if fields.get("due_at") else ""
            return f"waiting for {fields['reason']}{calls}{due}"
        case "run_failed":
            return f"{fields['reason']}: {short(fields['error'])}"
        case "steps_planned":
            return _round(fields)
        case "conversation_compacted":
            return (
                f"kept from message {fields['kept_from']} at {fields['tokens']} tokens, "
                f"summary by {fields['model']}: '{short(fields['summary'], 50)}'"
            )
        case "compaction_failed":
            return f"{fields['model']}: {short(fields['error'])}"
        case "run_completed":
            return f"output {short(fields['output'])}" if fields.get("output") is not None else ""
        case _:
            return short(" ".join(f"{key}={_plain(value)}" for key, value in fields.items()), 90)


def _round(fields: dict[str, Any]) -> str:
    """A workflow round: the calls it starts and the steps it settled."""
    parts = []
    calls = [call["call_id"] for call in fields.get("calls", ())]
    if calls:
        parts.append(f"starts {', '.join(calls)}")
    settled = [
        f"{event['key']} {_settled_as(event)}"
        for event in fields.get("events", ())
        if event["type"] in ("settled", "state_set")
    ]
    if settled:
        parts.append(f"settles {', '.join(settled)}")
    return short("; ".join(parts) or "plans nothing new", 120)


def _settled_as(event: dict[str, Any]) -> str:
    return "replayed" if event.get("replayed") else str(event.get("status", "completed"))


def _model_call(fields: dict[str, Any]) -> str:
    parts = [fields["model"] or "model"]
    if fields.get("text"):
        parts.append(f"'{short(fields['text'], 50)}'")
    calls = [call["name"] for call in fields.get("tool_calls", ())]
    if calls:
        parts.append(f"asks {', '.join(calls)}")
    usage = fields.get("usage")
    if usage is None or fields.get("usage_source") == "missing":
        parts.append("usage missing")
    else:
        tokens = sum(usage[k] for k in ("input", "output", "cache_read", "cache_write"))
        parts.append(plural(tokens + usage["cache_write_1h"], "token"))
    return ", ".join(parts)


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def report_view(report: Report) -> RenderableType:
    """The report: outcome, counts, usage and cost, then one line per tool call."""
    lines: list[RenderableType] = [text("Report", "bold underline")]

    def fact(label: str, value: str | Text, style: str = "") -> None:
        line = text(f"  {label:<12}", "dim")
        line.append_text(value if isinstance(value, Text) else text(value, style))
        lines.append(line)

    fact("status", status_text(report.status))
    if report.error:
        fact("error", f"{report.failure_reason}: {report.error}", "red")
    if report.output is not None:
        fact("output", short(report.output, 200))
    counts = [
        plural(report.turns, "turn"),
        plural(report.model_calls, "model call"),
        plural(len(report.tool_calls), "tool call"),
        plural(report.attempts, "attempt"),
    ]
    fact("counts", ", ".join(counts))
    totals = report.totals
    fact("usage", _usage(report))
    cost = str(totals.cost) if totals.cost is not None else "None"
    if totals.unpriced_calls:
        cost += f" ({plural(totals.unpriced_calls, 'call')} unpriced)"
    elif totals.cost is None and totals.failed_calls:
        cost += f" (no model call answered; {plural(totals.failed_calls, 'attempt')} failed)"
    fact("cost", cost)
    ended = f"{report.ended_at:%Y-%m-%d %H:%M:%S} UTC" if report.ended_at else "not yet"
    fact("started", f"{report.started_at:%Y-%m-%d %H:%M:%S} UTC, ended {ended}")
    if report.children:
        fact("children", ", ".join(report.children))
    if report.tool_calls:
        lines.append(text("Tool calls", "bold underline"))
        for call in report.tool_calls:
            line = text(f"  {call.call_id:<6} {call.name}  ")
            line.append_text(text(call.outcome, _OUTCOME_STYLE.get(call.outcome, "")))
            line.append_text(text(f"  {short(call.arguments, 60)}"))
            if call.error is not None:
                line.append_text(text(f" -> {short(call.error, 80)}", "red"))
            elif call.outcome == "succeeded":
                line.append_text(text(f" -> {short(call.result, 80)}"))
            if call.approved is not None:
                verdict = "approved" if call.approved else "denied"
                line.append_text(text(f" ({verdict} by {call.decided_by})", "magenta"))
            lines.append(line)
    return Group(*lines)


def _usage(report: Report) -> str:
    # Missing usage is never shown as a measured zero.
    totals = report.totals
    missing = totals.usage_sources.get("missing", 0)
    sources = ", ".join(f"{n} {source}" for source, n in sorted(totals.usage_sources.items()))
    if missing and missing == sum(totals.usage_sources.values()):
        return f"unknown: no model call reported usage ({sources})"
    tokens = plural(totals.usage.total, "token")
    if missing:
        tokens = f"at least {tokens}"
    return f"{tokens} ({totals.usage}; calls: {sources})" if sources else tokens


_OUTCOME_STYLE = {"succeeded": "green", "failed": "red", "unknown": "yellow", "pending": "cyan"}


def runs_table(rows: tuple[RunRow, ...]) -> Table:
    """A listing of runs, newest first."""
    table = Table(box=None, padding=(0, 2, 0, 0), pad_edge=False, header_style="dim")
    # A run id is what the reader copies into `psych inspect`: its column is not cut (up to
    # a length no generated id comes near), and an agent's name gets the room a name needs.
    ids = [text(row.run_id) for row in rows]
    widest = min(max((len(i) for i in ids), default=0), 64)
    table.add_column("run", no_wrap=True, min_width=widest)
    table.add_column("agent", no_wrap=True, max_width=40, overflow="ellipsis")
    for column in ("status", "attempt", "created (UTC)", "updated (UTC)"):
        table.add_column(column, no_wrap=True)
    for run_id, row in zip(ids, rows, strict=True):
        table.add_row(
            run_id,
            text(short(row.agent, 40)),
            status_text(row.status, row.waiting),
            text(str(row.attempt)),
            text(f"{row.created_at:%Y-%m-%d %H:%M:%S}"),
            text(f"{row.updated_at:%Y-%m-%d %H:%M:%S}"),
        )
    return table
