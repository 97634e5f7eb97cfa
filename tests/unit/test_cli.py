"""The `psych` command in this process: `new`, `skills`, store URLs, help and exit codes.

Reading real runs (`inspect`, `runs`) and the projects' own runs are in
tests/integration/test_cli_inspect.py and tests/integration/test_cli_scaffold.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from psych_cli import ExitCode, app
from tests._hostile_strings import assert_inert

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / ".agents" / "skills"

runner = CliRunner()


def psych(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


# -- help and exit codes ---------------------------------------------------------------------


EXIT_CODES = {
    "psych": "0 done; 1 (inspect) the run failed, was cancelled or was not found, (doctor) a "
    "check is not fine; 2 usage error",
    "new": "0 done; 2 usage error (bad option or name, a folder that is not empty); 130",
    "skills": "0 done; 2 usage error (bad option, no such folder, skills that differ",
    "skills install": "0 done; 2 usage error (bad option, no such folder",
    "skills list": "0 done; 2 usage error",
    "inspect": "0 done; 1 the run failed, was cancelled or was not found; 2 usage error",
    "runs": "0 done; 2 usage error (bad option or store URL); 3 store unusable",
    "doctor": "0 everything checked is fine; 1 something checked is not fine",
}
"""Each command's help, and the start of the exit codes it lists."""


def _help(command: str) -> str:
    code, out, _ = psych(*([] if command == "psych" else command.split()), "--help")
    assert code == 0
    assert "Usage: psych" in out
    return " ".join(out.split())


@pytest.mark.parametrize("command", list(EXIT_CODES))
def test_every_command_lists_the_exit_codes_it_can_end_with(command: str) -> None:
    text = _help(command)
    assert f"Exit codes: {EXIT_CODES[command]}" in text
    # Only inspect reads one run, so only it (and the overview) says 1 is a failed run.
    assert ("the run failed" in text) == (command in ("psych", "inspect"))
    assert ("3 store unusable" in text or "3 (inspect, runs) store" in text) == (
        command in ("psych", "inspect", "runs")
    )


@pytest.mark.parametrize("command", list(EXIT_CODES))
def test_flags_show_no_value_in_help(command: str) -> None:
    text = _help(command)
    assert "<bool>" not in text
    assert "--help -h Show this message and exit." in text


def test_options_that_take_a_value_name_it_in_help() -> None:
    text = _help("runs")
    for option in ("--store -s URL", "--tenant TENANT", "--limit N", "--cursor CURSOR"):
        assert option in text
    assert "--json Print JSON" in text
    assert "[env var: PSYCH_TENANT]" in text


def test_the_exit_codes_are_the_documented_ones() -> None:
    assert [int(code) for code in ExitCode] == [0, 1, 2, 3, 130]


def test_a_usage_error_exits_2() -> None:
    code, _, err = psych("new", "demo", "--template", "django")
    assert code == ExitCode.USAGE
    assert "django" in err


def test_version() -> None:
    code, out, _ = psych("--version")
    assert (code, out) == (0, "psych 0.1.0\n")


def test_help_and_new_import_no_runtime_and_no_store(tmp_path: Path) -> None:
    # The runtime and the adapters are imported only by the commands that read runs.
    script = (
        "import sys\n"
        "from psych_cli import app\n"
        "try:\n"
        "    app(['new', sys.argv[1]])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "print(sorted(m for m in sys.modules if m.startswith(('psych_runtime', 'psych_store'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "[]"


# -- psych new -------------------------------------------------------------------------------


def test_new_writes_the_basic_project(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    code, out, _ = psych("new", str(target))
    assert code == 0, out
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == [".gitignore", "README.md", "main.py", "pyproject.toml"]
    assert 'name = "demo"' in (target / "pyproject.toml").read_text()
    assert "{{" not in "".join(p.read_text() for p in target.rglob("*") if p.is_file())
    assert "python main.py" in out


def test_new_writes_the_fastapi_project(tmp_path: Path) -> None:
    target = tmp_path / "api"
    code, out, _ = psych("new", str(target), "--template", "fastapi")
    assert code == 0, out
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == [
        ".gitignore",
        "README.md",
        "agent.py",
        "app.py",
        "pyproject.toml",
        "tests/test_app.py",
        "worker.py",
    ]
    assert 'FastAPI(title="api"' in (target / "app.py").read_text()


def test_new_writes_the_tour_and_the_tour_runs_every_stop(tmp_path: Path) -> None:
    target = tmp_path / "tour"
    code, out, _ = psych("new", str(target), "--template", "tour")
    assert code == 0, out
    assert "python tour.py" in out
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == [".gitignore", "README.md", "pyproject.toml", "tour.py"]
    done = subprocess.run(
        [sys.executable, "tour.py"], cwd=target, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1. A thread: a run that carries the conversation of the one before",
        "   You said your name is Ann. (2 runs, 4 messages)",
        "2. An approval: the run waits, holding no worker, until a person decides",
        "   waiting: refund waits for approval (call 2.0)",
        "   Order B7 is refunded.",
        "3. A question: the model asks the user and waits for the answer",
        "   asks: Which size? ['M', 'L']",
        "   Size L it is.",
        "4. Memory: a fact about Ann, remembered in one run, given to the next",
        "   You wear size L. (the model was given 1 fact; the log keeps its id only)",
        "5. A skill on demand: the model reads the playbook only when it needs it",
        "   Would you like to exchange it first? (it read: {'name': 'returns'})",
        "6. A workflow: fixed steps as data, with a person's answer in the middle",
        "   waiting: ('confirm',)",
        "   completed: {'confirmed': 'yes', 'reserved': {'item': 'blue shirt', "
        "'reservation': 'R-1'}}",
    ]


def test_new_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    target.mkdir()
    (target / "main.py").write_text("mine\n")
    code, _, err = psych("new", str(target))
    assert code == ExitCode.USAGE
    assert "exists and is not empty; nothing was written" in err
    assert "--force" in err
    assert [p.name for p in target.iterdir()] == ["main.py"]
    assert (target / "main.py").read_text() == "mine\n"


def test_new_with_force_replaces_the_template_files_and_keeps_the_rest(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    target.mkdir()
    (target / "main.py").write_text("mine\n")
    (target / "notes.txt").write_text("keep\n")
    code, out, _ = psych("new", str(target), "--force")
    assert code == 0
    assert "main.py (replaced)" in out
    assert "asyncio.run(main())" in (target / "main.py").read_text()
    assert (target / "notes.txt").read_text() == "keep\n"


def test_new_writes_into_an_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "demo"
    target.mkdir()
    assert psych("new", str(target))[0] == 0
    assert (target / "main.py").exists()


@pytest.mark.parametrize("name", ["1demo", "my demo", "-x"])
def test_new_refuses_a_name_that_cannot_name_a_project(tmp_path: Path, name: str) -> None:
    code, _, err = psych("new", str(tmp_path / name))
    assert code == ExitCode.USAGE
    assert "cannot name a project" in err
    assert not (tmp_path / name).exists()


def test_new_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "demo").write_text("")
    code, _, err = psych("new", str(tmp_path / "demo"))
    assert code == ExitCode.USAGE
    assert "is a file" in err


# -- psych skills ----------------------------------------------------------------------------


def _page(skills: Path, name: str) -> bytes:
    return (skills / name / "SKILL.md").read_bytes()


def _skill_names() -> list[str]:
    return sorted(p.parent.name for p in SKILLS.glob("*/SKILL.md"))


def test_skills_install_copies_every_skill(tmp_path: Path) -> None:
    code, out, _ = psych("skills", "install", str(tmp_path))
    assert code == 0, out
    installed = tmp_path / ".agents" / "skills"
    assert sorted(p.name for p in installed.iterdir()) == _skill_names()
    for name in _skill_names():
        assert _page(installed, name) == _page(SKILLS, name)
    assert f"{len(_skill_names())} skills in" in out


def test_skills_install_again_changes_nothing(tmp_path: Path) -> None:
    psych("skills", "install", str(tmp_path))
    code, out, _ = psych("skills", "install", str(tmp_path))
    assert code == 0
    assert "already up to date" in out
    assert "written" not in out


def test_skills_install_refuses_to_replace_a_changed_skill_without_force(tmp_path: Path) -> None:
    psych("skills", "install", str(tmp_path))
    installed = tmp_path / ".agents" / "skills"
    (installed / "psych" / "SKILL.md").write_text("my own notes\n")
    (installed / "mine").mkdir()
    (installed / "mine" / "SKILL.md").write_text("---\nname: mine\n---\n")

    code, _, err = psych("skills", "install", str(tmp_path))
    assert code == ExitCode.USAGE
    assert "differ from this version's: psych; nothing was written" in " ".join(err.split())
    assert (installed / "psych" / "SKILL.md").read_text() == "my own notes\n"

    code, out, _ = psych("skills", "install", str(tmp_path), "--force")
    assert code == 0
    assert "written: psych" in out
    assert _page(installed, "psych") == _page(SKILLS, "psych")
    assert (installed / "mine" / "SKILL.md").exists(), "a skill of another name is left alone"


def test_skills_install_needs_a_folder(tmp_path: Path) -> None:
    code, _, err = psych("skills", "install", str(tmp_path / "nowhere"))
    assert code == ExitCode.USAGE
    assert "is not a folder" in err


def test_skills_list_names_every_skill_with_its_description() -> None:
    code, out, _ = psych("skills", "list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert names == _skill_names()
    assert "Start here to add Psych Runtime" in out


# -- store URLs ------------------------------------------------------------------------------


def test_an_unknown_store_url_is_a_usage_error() -> None:
    code, _, err = psych("runs", "--store", "redis://localhost")
    assert code == ExitCode.USAGE
    assert "'redis://localhost' is not a store URL this command knows" in err
    assert "sqlite:///relative/path.db" in err


def test_a_sqlite_url_without_a_path_is_a_usage_error() -> None:
    code, _, err = psych("inspect", "r1", "--store", "sqlite://")
    assert code == ExitCode.USAGE
    assert "names no file" in err


def test_a_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nope.db"
    code, _, err = psych("inspect", "r1", "--store", f"sqlite:///{path}")
    assert code == ExitCode.STORE
    assert f"there is no SQLite file at {path}" in " ".join(err.split())
    assert not path.exists()


def test_a_store_whose_adapter_is_not_installed_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psych_store_dynamodb", None)  # as if not installed
    code, _, err = psych("runs", "--store", "dynamodb://runs?region=eu-west-1")
    assert code == ExitCode.STORE
    text = " ".join(err.split())
    assert "the DynamoDBStore adapter cannot be imported" in text
    assert (
        'pip install --no-index --find-links "$PSYCH_WHEELHOUSE" "psych-runtime[dynamodb]"' in text
    )


def test_a_bad_option_in_a_dynamodb_url_is_a_usage_error() -> None:
    code, _, err = psych("runs", "--store", "dynamodb://runs?colour=blue")
    assert code == ExitCode.USAGE
    assert "unknown option(s)" in err


def test_the_store_url_can_come_from_the_environment(tmp_path: Path) -> None:
    result = runner.invoke(app, ["runs"], env={"PSYCH_STORE": f"sqlite:///{tmp_path}/none.db"})
    assert result.exit_code == ExitCode.STORE
    assert "there is no SQLite file" in result.stderr


def test_an_error_quoting_what_was_typed_is_shown_inert(tmp_path: Path) -> None:
    # The path of a missing SQLite file, as typed, is quoted in the error on stderr.
    hostile = tmp_path / "\x1b]0;pwned\x07\u202e[red]x[/red]\x9b2J.db"
    code, _, err = psych("inspect", "r1", "--store", f"sqlite:///{hostile}")
    assert code == ExitCode.STORE
    assert_inert(err.encode())
    assert "\\x1b]0;pwned\\x07\\u202e[red]x[/red]\\x9b2J.db" in err


def test_an_empty_tenant_is_a_usage_error(tmp_path: Path) -> None:
    for args in (["runs"], ["inspect", "r1"]):
        code, _, err = psych(*args, "--store", f"sqlite:///{tmp_path}/none.db", "--tenant", "")
        assert code == ExitCode.USAGE
        assert "--tenant (or PSYCH_TENANT) is empty" in err


def test_a_password_in_a_store_url_is_never_printed() -> None:
    code, out, err = psych("runs", "--store", "mysql://app:s3cret@db/app?colour=blue")
    assert code == ExitCode.USAGE
    assert "mysql://app:***@db/app?colour=blue" in err
    assert "unknown option" in err
    assert "s3cret" not in out + err


def test_inspect_says_what_a_continuation_and_a_compaction_did() -> None:
    import datetime as dt

    from psych_cli._render import summary
    from psych_runtime import Scope
    from psych_runtime.ports import UserMessage
    from psych_runtime.records import (
        Body,
        CompactionFailed,
        ConversationCompacted,
        Record,
        RunAdmitted,
    )

    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def said(body: Body) -> str:
        return summary(Record(run_id="r", seq=0, attempt=0, at=at, body=body))

    admitted = RunAdmitted(
        agent="chat",
        spec_version="v",
        input="and then?",
        scope=Scope(tenant="t"),
        continues="PREVIOUS",
        history=(UserMessage("hi"),),
        queued=("p.s.",),
    )
    assert (
        said(admitted) == "agent chat, input 'and then?', continues PREVIOUS (2 messages carried)"
    )
    compacted = ConversationCompacted(kept_from=4, summary="Ann asked.", tokens=1050, model="mini")
    assert said(compacted) == "kept from message 4 at 1050 tokens, summary by mini: 'Ann asked.'"
    assert said(CompactionFailed(model="mini", error="down")) == "mini: down"
