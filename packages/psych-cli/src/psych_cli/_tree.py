"""How a workflow run's steps look on a terminal: the tree `workflow_view` returns.

One line per step: its memo key, kind and status, how many tries, then what it waits for,
why it failed, or what it produced. A foreach shows one line per item and a loop one per
iteration, each with its steps under it. Every string is made inert first (`_render.text`).
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from rich.tree import Tree

from psych_cli._render import short
from psych_cli._render import text as _text
from psych_runtime.workflows import ItemView, StepView, WorkflowView

_STEP_STYLE = {
    "completed": "green",
    "replayed": "blue",
    "failed": "red",
    "skipped": "dim",
    "pending": "dim",
    "running": "cyan",
    "waiting": "magenta",
    "paused": "bold magenta",
    "retrying": "yellow",
}


def steps_view(view: WorkflowView) -> RenderableType:
    """The run's steps as a tree, under a title that says what it follows."""
    title = _text("Steps", "bold underline")
    title.append_text(_text(f"  workflow {view.workflow}", "cyan"))
    if view.replay_of:
        title.append_text(_text(f"  (replays {view.replay_of} from {view.from_step})", "blue"))
    if view.step_mode:
        title.append_text(_text("  step mode", "magenta"))
    elif view.breakpoints:
        title.append_text(_text(f"  breakpoints: {', '.join(view.breakpoints)}", "magenta"))
    tree = Tree(title, guide_style="dim")
    _add(tree, view.steps)
    return tree


def _add(node: Tree, steps: tuple[StepView, ...]) -> None:
    branch: str | None = None
    parent = node
    for step in steps:
        if step.branch is not None and step.branch != branch:
            branch = step.branch
            parent = node.add(_text(f"({branch})", "dim"))
        elif step.branch is None:
            parent = node
        child = parent.add(_step_line(step))
        _add(child, step.steps)
        for item in step.items:
            _add(child.add(_item_line(step, item)), item.steps)


def _step_line(step: StepView) -> Text:
    line = _text(f"{step.key}  ", "bold")
    line.append_text(_text(f"{step.kind}  ", "dim"))
    line.append_text(_text(step.status, _STEP_STYLE.get(step.status, "")))
    if step.attempts > 1:
        line.append_text(_text(f"  {step.attempts} tries"))
    if step.waiting_for:
        line.append_text(_text(f"  {short(step.waiting_for, 80)}", "magenta"))
    if step.child_run_id and not step.waiting_for:
        line.append_text(_text(f"  child {step.child_run_id}", "dim"))
    if step.failure is not None:
        failure = f"  {step.failure.kind}: {short(step.failure.error, 100)}"
        line.append_text(_text(failure, "red"))
    elif step.status in ("completed", "replayed") and step.output is not None and not step.items:
        line.append_text(_text(f"  -> {short(step.output, 60)}"))
    return line


def _item_line(step: StepView, item: ItemView) -> Text:
    what = "item" if step.kind == "foreach" else "iteration"
    line = _text(f"[{item.index}] {what}", "bold")
    if step.kind == "foreach":
        line.append_text(_text(f" {short(item.item, 40)}"))
    line.append_text(_text(f"  {item.status}", _STEP_STYLE.get(item.status, "")))
    if item.failure is not None:
        line.append_text(_text(f"  {item.failure.kind}", "red"))
    return line
