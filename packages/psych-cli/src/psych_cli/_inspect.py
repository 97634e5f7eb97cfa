"""`psych inspect` and `psych runs`: read runs back from a store, never writing to it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

import psych_runtime
from psych_cli._exit import CliError, ExitCode
from psych_cli._inert import inert
from psych_cli._render import header, plural, record_line, report_view, runs_table
from psych_cli._stores import display_url, open_store
from psych_cli._tree import steps_view
from psych_runtime import Report, RunQuery, RunStatusName, ScopedStore
from psych_runtime.workflows import WorkflowView

_ENDED_BADLY = {"failed", "cancelled"}


@dataclass(frozen=True, slots=True)
class Target:
    """Where to read: a store URL, a tenant, and the folder of a `FileBlobStore` when the
    runs' large bodies were offloaded to one.

    Attributes:
        defaulted: the tenant is the default one because the command line named none.
    """

    url: str
    tenant: str
    blobs: Path | None = None
    defaulted: bool = False

    @property
    def shown(self) -> str:
        return display_url(self.url)


@asynccontextmanager
async def _scoped(target: Target) -> AsyncIterator[ScopedStore]:
    if target.blobs is not None and not target.blobs.is_dir():
        # FileBlobStore would create it: a command that only reads must not.
        raise CliError(f"there is no blob folder at {target.blobs}", ExitCode.USAGE)
    store = open_store(target.url)
    reading: psych_runtime.ports.Store = store
    if target.blobs is not None:
        reading = psych_runtime.OffloadingStore(store, psych_runtime.FileBlobStore(target.blobs))
    try:
        yield reading.scoped(psych_runtime.Scope(tenant=target.tenant))
    except psych_runtime.errors.RunNotFound as error:
        defaulted = " (the default: no --tenant was given)" if target.defaulted else ""
        raise CliError(
            f"no run {error.run_id} in tenant {target.tenant!r}{defaulted} at {target.shown}",
            ExitCode.RUN_FAILED,
            hint="check the run id and --tenant; `psych runs` lists the tenant's runs",
        ) from None
    except psych_runtime.errors.FoldError as error:
        raise CliError(
            f"cannot read the run at {target.shown}: {error}",
            ExitCode.STORE,
            hint="a record kept in a blob store needs --blobs DIR (the FileBlobStore folder)"
            if "blob" in str(error)
            else None,
        ) from None
    except (
        psych_runtime.errors.StoreUnavailable,
        psych_runtime.errors.StoreError,
        OSError,
    ) as error:
        raise CliError(
            f"cannot read the store at {target.shown}: {error}",
            ExitCode.STORE,
            hint="check that it is reachable and that your app has migrated it",
        ) from None
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            await close()


async def inspect_run(
    target: Target, run_id: str, *, follow: bool, as_json: bool, console: Console
) -> ExitCode:
    """Show the run's status, its records and its report; with `follow`, as they land."""
    async with _scoped(target) as scoped:
        if as_json:
            return await _inspect_json(scoped, run_id, follow=follow, console=console)
        status = await psych_runtime.status(scoped, run_id)
        console.print(header(status, tenant=target.tenant, store=target.shown))
        console.print()
        console.print(Text("Timeline", style="bold underline"))
        if follow:
            async for record in psych_runtime.stream(scoped, run_id, poll=0.2):
                console.print(record_line(record))
        else:
            for record in await psych_runtime.read_log(scoped, run_id):
                console.print(record_line(record))
        report = await psych_runtime.report(scoped, run_id)
        view = await _workflow_view(scoped, run_id)
        if view is not None:
            console.print()
            console.print(steps_view(view))
        console.print()
        console.print(report_view(report))
        return _exit_for(report)


async def _workflow_view(scoped: ScopedStore, run_id: str) -> WorkflowView | None:
    """The run's step tree, when it is a workflow's run."""
    try:
        return await psych_runtime.workflow_view(scoped, run_id)
    except psych_runtime.errors.NotReplayable:
        return None


async def _inspect_json(
    scoped: ScopedStore, run_id: str, *, follow: bool, console: Console
) -> ExitCode:
    if follow:
        # JSON Lines: one record per line as it lands, then the report.
        async for record in psych_runtime.stream(scoped, run_id, poll=0.2):
            _print_json(console, {"record": record.model_dump(mode="json")})
        report = await psych_runtime.report(scoped, run_id)
        _print_json(console, {"report": report.model_dump(mode="json")})
        view = await _workflow_view(scoped, run_id)
        if view is not None:
            _print_json(console, {"workflow": view.model_dump(mode="json")})
        return _exit_for(report)
    status = await psych_runtime.status(scoped, run_id)
    records = await psych_runtime.read_log(scoped, run_id)
    report = await psych_runtime.report(scoped, run_id)
    document = {
        "status": status.model_dump(mode="json"),
        "records": [record.model_dump(mode="json") for record in records],
        "report": report.model_dump(mode="json"),
    }
    view = await _workflow_view(scoped, run_id)
    if view is not None:
        document["workflow"] = view.model_dump(mode="json")
    _print_json(console, document, indent=2)
    return _exit_for(report)


def _exit_for(report: Report) -> ExitCode:
    return ExitCode.RUN_FAILED if report.status in _ENDED_BADLY else ExitCode.OK


def _print_json(console: Console, document: Any, *, indent: int | None = None) -> None:
    # Through the console's file, unstyled: JSON is for programs. ASCII only, so a control or
    # bidirectional character from the log reaches a terminal that shows the JSON as a \uXXXX
    # escape, never as itself; any JSON reader gets the same strings back.
    console.file.write(json.dumps(document, indent=indent, ensure_ascii=True) + "\n")
    console.file.flush()


async def list_runs(
    target: Target,
    *,
    status: RunStatusName | None,
    limit: int,
    cursor: str | None,
    as_json: bool,
    console: Console,
) -> ExitCode:
    """One page of the tenant's runs, newest first."""
    async with _scoped(target) as scoped:
        page = await scoped.list_runs(RunQuery(status=status, limit=limit, cursor=cursor))
    if as_json:
        rows = [_row_json(row) for row in page.items]
        document = {"tenant": target.tenant, "runs": rows, "next_cursor": page.next_cursor}
        _print_json(console, document, indent=2)
        return ExitCode.OK
    where = f"tenant {target.tenant!r} at {target.shown}"
    if not page.items:
        which = f" {status}" if status else ""
        console.print(Text(inert(f"No{which} runs in {where}.")))
        if target.defaulted:
            # The store cannot list every tenant's runs at once, so an empty default tenant
            # may be a store full of other tenants' runs: say so, and how to name one.
            console.print(
                Text(
                    f"No --tenant was given, so this is the default tenant "
                    f"{target.tenant!r} (where session() and the psych new templates put "
                    "runs without a Scope). Name your app's tenant with --tenant TENANT "
                    "or PSYCH_TENANT.",
                    style="dim",
                )
            )
        return ExitCode.OK
    console.print(runs_table(page.items))
    footer = f"{plural(len(page.items), 'run')} of {where}"
    if page.next_cursor:
        footer += f"; more with --cursor {page.next_cursor}"
    console.print(Text(inert(footer), style="dim"))
    return ExitCode.OK


def _row_json(row: psych_runtime.ports.RunRow) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "tenant": row.tenant,
        "agent": row.agent,
        "status": row.status,
        "waiting": row.waiting,
        "attempt": row.attempt,
        "parent_run_id": row.parent_run_id,
        "spec_version": row.spec_version,
        "created_at": row.created_at.isoformat(),
        "updated_at": row.updated_at.isoformat(),
    }
