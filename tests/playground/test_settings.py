"""The playground's settings from the environment, the store URLs it opens, and what its
command says when a setting is wrong or the server is not kept to this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from psych_playground.runs_query import BadCursor, decode_cursor, encode_cursor
from psych_playground.settings import DEFAULT_STORE, Settings, SettingsError
from psych_playground.stores import StoreUrlError, display_url, parse_store_url


def test_defaults_keep_the_server_on_this_machine_with_the_demo_model() -> None:
    settings = Settings.from_env({})
    assert (settings.host, settings.port, settings.tenant) == ("127.0.0.1", 3000, "default")
    assert settings.store_url == DEFAULT_STORE
    assert (settings.lease_seconds, settings.demo_delay) == (15.0, 0.03)
    assert (settings.model_kind, settings.loopback_only) == ("demo", True)
    assert Settings.from_env({"OPENAI_API_KEY": "k"}).model_kind == "openai"
    assert Settings.from_env({"OPENAI_API_KEY": ""}).model_kind == "demo"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("playground.example", False)],
)  # fmt: skip
def test_which_hosts_keep_the_server_to_this_machine(host: str, loopback: bool) -> None:
    assert Settings.from_env({"PLAYGROUND_HOST": host}).loopback_only is loopback


def test_bad_values_name_their_variable() -> None:
    with pytest.raises(SettingsError, match="PLAYGROUND_PORT is 'http': set it to a port number"):
        Settings.from_env({"PLAYGROUND_PORT": "http"})
    with pytest.raises(SettingsError, match="PLAYGROUND_PORT is '70000'"):
        Settings.from_env({"PLAYGROUND_PORT": "70000"})
    with pytest.raises(SettingsError, match=r"PLAYGROUND_LEASE_SECONDS is '0\.5': .* >= 1\.0"):
        Settings.from_env({"PLAYGROUND_LEASE_SECONDS": "0.5"})
    with pytest.raises(SettingsError, match="PLAYGROUND_DEMO_DELAY is 'nan'"):
        Settings.from_env({"PLAYGROUND_DEMO_DELAY": "nan"})


def test_store_urls() -> None:
    relative = parse_store_url("sqlite:///data/p.db")
    assert (relative.kind, relative.path) == ("sqlite", Path("data/p.db"))
    assert parse_store_url("sqlite:////tmp/p.db").path == Path("/tmp/p.db")
    postgres = parse_store_url("postgresql://u:secret@db:5432/app?schema=demo&sslmode=disable")
    assert (postgres.kind, postgres.schema) == ("postgresql", "demo")
    assert postgres.dsn == "postgresql://u:secret@db:5432/app?sslmode=disable"
    assert parse_store_url("postgres://u@db/app").schema == "psych"
    with pytest.raises(StoreUrlError, match=r"'mysql://u:\*\*\*@db/app' is not a store URL"):
        parse_store_url("mysql://u:secret@db/app")
    with pytest.raises(StoreUrlError, match="names no file"):
        parse_store_url("sqlite://")
    assert display_url("postgresql://u:secret@db/app") == "postgresql://u:***@db/app"


def test_cursors_read_back_and_others_are_refused() -> None:
    assert decode_cursor(encode_cursor("1234", "01ABC")) == ("1234", "01ABC")
    assert decode_cursor(encode_cursor(None, None)) == (None, None)
    assert decode_cursor(None) == (None, None)
    for forged in ("garbage", encode_cursor("1", None)[:-2] + "!!", "eyJhIjogMX0"):
        with pytest.raises(BadCursor, match="was not issued by this server"):
            decode_cursor(forged)


def _command(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    variables = {**os.environ, **env}
    variables.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "psych_playground", *args],
        env=variables,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_command_refuses_bad_settings_before_starting_anything() -> None:
    done = _command("serve", PSYCH_STORE="redis://cache")
    assert done.returncode == 2
    assert "PSYCH_STORE 'redis://cache' is not a store URL" in done.stderr
    unknown = _command("launch")
    assert unknown.returncode == 2
    assert "invalid choice: 'launch'" in unknown.stderr


def test_a_server_not_kept_to_this_machine_says_it_is_not_for_the_internet(
    tmp_path: Path,
) -> None:
    # 192.0.2.1 is a documentation address no machine has: the warning comes first, then the
    # bind fails, so nothing listens anywhere.
    done = _command(
        "serve", PLAYGROUND_HOST="192.0.2.1", PSYCH_STORE=f"sqlite:///{tmp_path / 'p.db'}"
    )
    assert done.returncode != 0
    assert "WARNING: listening on 192.0.2.1, not only on this machine" in done.stderr
    assert "Do not expose it to the internet." in done.stderr
