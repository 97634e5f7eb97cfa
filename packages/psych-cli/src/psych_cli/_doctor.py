"""`psych doctor`: what this deployment has, for an operator checking it. Read-only.

It reports what is installed (the project's distributions, the optional SDKs, Python), the
store a URL names (whether it answers, and whether its schema is the adapter's: behind, up to
date or newer), which sandbox backends work on this machine and what each can prove, what
the default egress policy lets out, and whether telemetry can be exported. Only the store
decides the exit code: the rest describes the machine, and an app may use none of it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from psych_cli._doctor_facts import (
    EgressFacts,
    Installed,
    TelemetryFacts,
    egress_facts,
    installed,
    telemetry_facts,
)
from psych_cli._doctor_render import report
from psych_cli._doctor_sandboxes import SandboxFacts, sandbox_facts
from psych_cli._doctor_store import UP_TO_DATE, StoreFacts, check_store
from psych_cli._exit import ExitCode


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Everything `psych doctor` found; `store` is None when no store was named."""

    installed: Installed
    store: StoreFacts | None
    sandboxes: tuple[SandboxFacts, ...]
    egress: EgressFacts
    telemetry: TelemetryFacts

    @property
    def problems(self) -> tuple[str, ...]:
        """What is not fine, one sentence each: empty when everything checked is fine."""
        store = self.store
        if store is None:
            return ()
        if store.problem is not None:
            return (f"the store at {store.url}: {store.problem}",)
        schema = store.schema
        if schema is not None and schema.verdict not in (None, UP_TO_DATE):
            return (f"the store at {store.url}: schema {schema.verdict}",)
        return ()


def diagnose(store_url: str | None, *, timeout: float, environ: Mapping[str, str]) -> Diagnosis:
    """Look at this machine, and at the store `store_url` names when it names one.

    Raises:
        CliError: ``USAGE`` when `store_url` is not a store URL the command knows.
    """
    store = None if store_url is None else asyncio.run(check_store(store_url, timeout))
    return Diagnosis(
        installed=installed(),
        store=store,
        sandboxes=sandbox_facts(environ, timeout),
        egress=egress_facts(),
        telemetry=telemetry_facts(environ),
    )


def doctor(
    store_url: str | None,
    *,
    timeout: float,
    as_json: bool,
    console: Console,
    environ: Mapping[str, str] | None = None,
) -> ExitCode:
    """Print the diagnosis (a report, or one JSON object); ``RUN_FAILED`` (1) when something
    checked is not fine."""
    diagnosis = diagnose(
        store_url, timeout=timeout, environ=os.environ if environ is None else environ
    )
    if as_json:
        # ASCII only, like `inspect --json`: a string from outside (an engine's header, a
        # store's error) reaches a terminal showing the JSON as escapes, never as itself.
        console.file.write(json.dumps(as_document(diagnosis), indent=2, ensure_ascii=True) + "\n")
        console.file.flush()
    else:
        console.print(report(diagnosis))
    return ExitCode.RUN_FAILED if diagnosis.problems else ExitCode.OK


def as_document(diagnosis: Diagnosis) -> dict[str, Any]:
    """The diagnosis as one JSON object: ``ok``, ``problems``, then each part's facts."""
    return {
        "ok": not diagnosis.problems,
        "problems": list(diagnosis.problems),
        "installed": dataclasses.asdict(diagnosis.installed),
        "store": None if diagnosis.store is None else dataclasses.asdict(diagnosis.store),
        "sandboxes": [dataclasses.asdict(sandbox) for sandbox in diagnosis.sandboxes],
        "egress": dataclasses.asdict(diagnosis.egress),
        "telemetry": dataclasses.asdict(diagnosis.telemetry),
    }
