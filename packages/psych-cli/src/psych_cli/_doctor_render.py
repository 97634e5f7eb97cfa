"""How `psych doctor`'s diagnosis looks on a terminal: one section per part, one fact a line.

Every value comes from outside this command (package metadata, the environment, a store's or
an engine's answer), so each goes through `_render.text`, which makes it inert first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from psych_cli._doctor_facts import CONFIGURED, SDKS, EgressFacts
from psych_cli._doctor_sandboxes import SandboxFacts
from psych_cli._doctor_store import UP_TO_DATE, StoreFacts
from psych_cli._render import plural, text

if TYPE_CHECKING:
    from psych_cli._doctor import Diagnosis

_NOT_INSTALLED = "not installed"


class _Lines:
    def __init__(self) -> None:
        self.lines: list[RenderableType] = []

    def section(self, title: str, summary: str = "", style: str = "") -> None:
        if self.lines:
            self.lines.append(Text())
        line = text(title, "bold underline")
        if summary:
            line.append_text(text(f"  {summary}", style))
        self.lines.append(line)

    def fact(self, label: str, value: str, style: str = "", *, width: int = 36) -> None:
        line = text(f"  {label:<{width}}", "dim")
        line.append_text(text(value, style))
        self.lines.append(line)


def report(diagnosis: Diagnosis) -> RenderableType:
    """The whole diagnosis, then a line that says whether everything checked is fine."""
    out = _Lines()
    found = diagnosis.installed
    out.section("Installed", f"Python {found.python} ({found.implementation}) {found.executable}")
    for name, version in found.distributions.items():
        out.fact(name, version or _NOT_INSTALLED, "" if version else "dim")
    out.section("Optional SDKs")
    for name, version in found.sdks.items():
        out.fact(name, f"{version or _NOT_INSTALLED:<16}{SDKS[name]}", "" if version else "dim")
    _store(out, diagnosis.store)
    out.section("Sandboxes", "what each backend's own check allows here; nothing was run")
    for sandbox in diagnosis.sandboxes:
        _sandbox(out, sandbox)
    _egress(out, diagnosis.egress)
    telemetry = diagnosis.telemetry
    out.section("Telemetry", telemetry.state, "green" if telemetry.state == CONFIGURED else "")
    for name, version in telemetry.distributions.items():
        out.fact(name, version or _NOT_INSTALLED, "" if version else "dim")
    for name, value in telemetry.settings.items():
        out.fact(name, value)
    for name in telemetry.missing:
        out.fact(name, "not set", "dim")
    out.lines.append(Text())
    problems = diagnosis.problems
    if problems:
        out.lines.append(text(f"{plural(len(problems), 'problem')}:", "bold red"))
        out.lines.extend(text(f"  {problem}", "red") for problem in problems)
    else:
        out.lines.append(text("Everything checked is fine.", "bold green"))
    return Group(*out.lines)


def _store(out: _Lines, store: StoreFacts | None) -> None:
    if store is None:
        out.section("Store", "no store checked: give --store URL (or set PSYCH_STORE)", "dim")
        return
    out.section("Store", store.url)
    if store.adapter:
        out.fact("adapter", store.adapter)
    if store.answers:
        took = f" in {store.seconds * 1000:.0f} ms" if store.seconds is not None else ""
        out.fact("answers", f"yes: listed a page of runs{took}", "green")
    else:
        out.fact("problem", store.problem or "", "red")
        if store.hint:
            out.fact("hint", store.hint)
    schema = store.schema
    if schema is not None:
        if schema.verdict is not None:
            good = schema.verdict == UP_TO_DATE
            out.fact("schema", f"{schema.applied}: {schema.verdict}", "green" if good else "red")
        else:
            out.fact("schema", schema.note or "not read", "yellow")
        if schema.known is not None:
            out.fact("adapter knows", f"schema version {schema.known} (its newest migration)")


def _sandbox(out: _Lines, sandbox: SandboxFacts) -> None:
    name = sandbox.backend
    if sandbox.version is None:
        out.fact(name, f"{_NOT_INSTALLED} ({sandbox.distribution})", "dim")
        return
    if sandbox.usable:
        out.fact(name, f"works: level {sandbox.level}", "green")
    else:
        out.fact(name, f"not usable: {sandbox.problem}", "yellow")
    if sandbox.proves:
        can = "can prove" if sandbox.usable else "could prove, once usable"
        out.fact("", f"{can}: {', '.join(sandbox.proves)}")
    for guarantee, reason in sandbox.cannot.items():
        if reason != sandbox.problem:  # said once above, not once per guarantee
            out.fact("", f"cannot prove {guarantee}: {reason}", "dim")
    for note in sandbox.notes:
        out.fact("", note, "dim")


def _egress(out: _Lines, egress: EgressFacts) -> None:
    out.section("Egress", "EgressPolicy() as constructed: what a Runtime without egress= lets out")
    fields = ", ".join(f"{name}={value!r}" for name, value in egress.defaults.items())
    out.fact("defaults", fields)
    out.fact("hosts", "any host" if egress.any_host else "only the allow_hosts list")
    for verdict in egress.addresses:
        label = f"{verdict.address} ({verdict.kind})"
        if verdict.refusal is None:
            out.fact(label, "allowed", "green")
        else:
            out.fact(label, f"refused: {verdict.refusal}")
