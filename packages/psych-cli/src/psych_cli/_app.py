"""The `psych` command line: start a project, install the skills, look at runs.

It never runs an agent: your code does. The runtime and the store adapters are imported only
by the commands that need them, so `psych --help` and `psych new` start at once.
"""

import asyncio
import importlib.metadata
from collections.abc import Callable, Coroutine
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from psych_cli._exit import (
    DOCTOR_EXIT_CODES,
    EXIT_CODES_HELP,
    INSPECT_EXIT_CODES,
    NEW_EXIT_CODES,
    RUNS_EXIT_CODES,
    SKILLS_EXIT_CODES,
    CliError,
    ExitCode,
)
from psych_cli._inert import inert
from psych_cli._new import Template, new_project
from psych_cli._skills import bundled_skills, install_skills

DEFAULT_TENANT = "default"
"""The tenant `inspect` and `runs` read when given none: the one ``session()`` and the
``psych new`` templates put runs in when the app names no `Scope`."""


def _without_flag_values(params: list[Any]) -> list[Any]:
    # Typer's rich help shows ``<bool>`` after every flag, though a flag takes no value: an
    # empty metavar (which a flag uses for nothing else) leaves that column blank.
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(typer.core.TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_values(super().get_params(ctx))


class _Group(typer.core.TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_values(super().get_params(ctx))


app = typer.Typer(
    name="psych",
    cls=_Group,
    help="Psych Runtime's command line: start a project, give your coding agent the skills, "
    "and look at runs in a store. It never runs an agent: your code does.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
skills_app = typer.Typer(
    cls=_Group,
    help="The library's skills: one per feature, for coding agents.",
    no_args_is_help=True,
    epilog=SKILLS_EXIT_CODES,
)
app.add_typer(skills_app, name="skills")


def _stdout(**options: Any) -> Console:
    # Lines are never wrapped or cut (soft_wrap): piped into a file or a pager they stay
    # whole, and tables get room for a full run id when the output is not a terminal.
    console = Console(highlight=False, soft_wrap=True, **options)
    if console.is_terminal:
        return console
    return Console(highlight=False, soft_wrap=True, width=160, **options)


_out = _stdout()
# What `inspect` and `runs` print comes from logs. Their console parses no markup and no
# emoji codes, so even a string that reached it without going through `_render` would be
# shown as it is, not styled; the renderers make every log string inert before that.
_log_out = _stdout(markup=False, emoji=False)
_err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


class Status(StrEnum):
    """A run's status, as `psych runs --status` takes it."""

    queued = "queued"
    running = "running"
    waiting = "waiting"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"


StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        "-s",
        metavar="URL",
        envvar="PSYCH_STORE",
        show_envvar=True,
        help="Where the runs are: sqlite:///relative.db, sqlite:////absolute.db, "
        "postgresql://user:pw@host/db?schema=psych, mysql://user:pw@host/db, "
        "dynamodb://TABLE?region=R&endpoint_url=URL.",
    ),
]
TenantOption = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        metavar="TENANT",
        envvar="PSYCH_TENANT",
        show_envvar=True,
        help=f"The tenant whose runs to read (Scope.tenant). Without it: {DEFAULT_TENANT!r}, "
        "where session() and the psych new templates put runs when the app names no Scope.",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print JSON instead of tables, for programs.")
]


def _version(show: bool) -> None:
    if show:
        _out.print(f"psych {importlib.metadata.version('psych-cli')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Psych Runtime's command line."""


@app.command(cls=_Command, epilog=NEW_EXIT_CODES)
def new(
    name: Annotated[
        Path,
        typer.Argument(
            metavar="NAME", help="The project's folder (created); its name names the project."
        ),
    ],
    template: Annotated[
        Template,
        typer.Option(
            "--template",
            "-t",
            help="basic: one agent run in-process (main.py). fastapi: a web app that admits "
            "runs, a worker process, and tests. tour: approvals, a question, memory, skills, "
            "a thread and a workflow, offline (tour.py).",
        ),
    ] = Template.basic,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Write into a folder that is not empty, replacing same-named files."
        ),
    ] = False,
) -> None:
    """Write a new project that you own, from a template."""

    def run() -> ExitCode:
        written = new_project(name, template, force=force)
        _out.print(f"Created [bold]{escape(str(name))}[/] from the {template.value} template:")
        for file in written.files:
            note = " [yellow](replaced)[/]" if file in written.replaced else ""
            _out.print(f"  {escape(file)}{note}")
        _out.print()
        _out.print("Next:")
        _out.print(f"  cd {escape(str(name))}")
        if template is Template.basic:
            _out.print("  python main.py")
        elif template is Template.tour:
            _out.print("  python tour.py")
        else:
            install = 'pip install --no-index --find-links "$PSYCH_WHEELHOUSE" -e ".[dev]"'
            _out.print(f"  {install}", markup=False)
            _out.print("  uvicorn app:app --reload    # and, in another terminal:")
            _out.print("  python worker.py")
            _out.print("  pytest")
        _out.print("  psych skills install        # the skills, for your coding agent")
        return ExitCode.OK

    _finish(run)


@skills_app.command("install", cls=_Command, epilog=SKILLS_EXIT_CODES)
def skills_install(
    directory: Annotated[
        Path,
        typer.Argument(
            metavar="DIRECTORY", help="The project to install them into.", show_default="."
        ),
    ] = Path(),
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace skill folders that differ from this version's."),
    ] = False,
) -> None:
    """Copy the skills into DIRECTORY/.agents/skills/ (start with psych/SKILL.md)."""

    def run() -> ExitCode:
        installed = install_skills(directory, force=force)
        total = len(installed.written) + len(installed.unchanged)
        _out.print(f"{total} skills in {installed.folder}:")
        if installed.written:
            _out.print(f"  written: {', '.join(installed.written)}")
        if installed.unchanged:
            _out.print(f"  already up to date: {', '.join(installed.unchanged)}")
        _out.print("Point your coding agent at .agents/skills/psych/SKILL.md first.")
        return ExitCode.OK

    _finish(run)


@skills_app.command("list", cls=_Command, epilog=SKILLS_EXIT_CODES)
def skills_list() -> None:
    """List the skills this version carries, with what each is for."""

    def run() -> ExitCode:
        for skill in bundled_skills():
            _out.print(Text.assemble((skill.name, "bold cyan"), "  ", skill.description))
        return ExitCode.OK

    _finish(run)


@app.command(cls=_Command, epilog=INSPECT_EXIT_CODES)
def inspect(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The run's id.")],
    store: StoreOption,
    tenant: TenantOption = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Show records as they land, until the run ends; then the report."
        ),
    ] = False,
    as_json: JsonOption = False,
    blobs: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The FileBlobStore folder, when the app offloads large record bodies to one.",
        ),
    ] = None,
) -> None:
    """Show a run: its status, the timeline of its records, and its report. Read-only.

    Exits 1 when the run failed or was cancelled (with --follow: when it ends so).
    """

    def run() -> ExitCode:
        from psych_cli._inspect import Target, inspect_run

        target = Target(store, _tenant(tenant), blobs, defaulted=tenant is None)
        return _async(inspect_run(target, run_id, follow=follow, as_json=as_json, console=_log_out))

    _finish(run)


@app.command(cls=_Command, epilog=RUNS_EXIT_CODES)
def runs(
    store: StoreOption,
    tenant: TenantOption = None,
    status: Annotated[Status | None, typer.Option(help="Only runs in this status.")] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=1000, metavar="N", help="At most this many runs.")
    ] = 20,
    cursor: Annotated[
        str | None,
        typer.Option(metavar="CURSOR", help="Where the previous page ended (printed under it)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List one tenant's runs, newest first. Read-only.

    A store keeps each tenant's runs apart and lists them one tenant at a time: without
    --tenant (or PSYCH_TENANT) this is the default tenant's.
    """

    def run() -> ExitCode:
        from psych_cli._inspect import Target, list_runs

        return _async(
            list_runs(
                Target(store, _tenant(tenant), defaulted=tenant is None),
                status=status.value if status else None,
                limit=limit,
                cursor=cursor,
                as_json=as_json,
                console=_log_out,
            )
        )

    _finish(run)


@app.command(cls=_Command, epilog=DOCTOR_EXIT_CODES)
def doctor(
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            "-s",
            metavar="URL",
            envvar="PSYCH_STORE",
            show_envvar=True,
            help="A store to check, in the forms inspect and runs take. Without it (or "
            "PSYCH_STORE), no store is checked.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            max=600,
            metavar="SECONDS",
            help="How long the store, and the container engine, may take to answer.",
        ),
    ] = 5.0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead, for programs.")
    ] = False,
) -> None:
    """Check a deployment: what is installed, whether the store answers, which sandboxes work
    here and what each can prove, the default egress policy, telemetry. Read-only.

    Exits 1 when something it checked is not fine; the machine's facts alone never do.
    """

    def run() -> ExitCode:
        from psych_cli._doctor import doctor as diagnose

        return diagnose(store, timeout=timeout, as_json=as_json, console=_log_out)

    _finish(run)


def _tenant(given: str | None) -> str:
    if given is None:
        return DEFAULT_TENANT
    if not given:
        raise CliError(
            "--tenant (or PSYCH_TENANT) is empty: a tenant has a name",
            ExitCode.USAGE,
            hint=f"name the tenant, or leave --tenant out to read {DEFAULT_TENANT!r}",
        )
    return given


def _async(work: Coroutine[Any, Any, ExitCode]) -> ExitCode:
    return asyncio.run(work)


def _finish(run: Callable[[], ExitCode]) -> None:
    """Run a command's body; report a `CliError` in one message, never a traceback."""
    try:
        code = run()
    except CliError as error:
        # A message may quote a store's error or a run id as typed: shown inert, like logs.
        _err.print(Text.assemble(("error: ", "bold red"), inert(error.message, lines=True)))
        if error.hint:
            _err.print(Text.assemble(("hint: ", "bold"), inert(error.hint, lines=True)))
        code = error.code
    except KeyboardInterrupt:
        _err.print("interrupted")
        code = ExitCode.INTERRUPTED
    raise typer.Exit(int(code))
