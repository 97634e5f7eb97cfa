"""The playground's settings, read once from the environment into one frozen value.

PSYCH_STORE               sqlite:///path.db (default sqlite:///.cache/playground/playground.db)
                          or postgresql://user:password@host:port/database
PSYCH_TENANT              whose runs the server shows and admits (default "default")
PLAYGROUND_HOST           where `serve` listens (default 127.0.0.1: this machine only)
PLAYGROUND_PORT           (default 3000)
PLAYGROUND_LEASE_SECONDS  how long a worker's claim holds a run without renewal (default 15);
                          also how long a run may go untouched before it shows as stuck
PLAYGROUND_DEMO_DELAY     seconds between the demo model's streamed words (default 0.03)
PLAYGROUND_UI_DIST        the built UI to serve (default apps/playground/ui/dist)
OPENAI_API_KEY            set: a real model through psych_runtime.OpenAIChatClient
OPENAI_BASE_URL           (read by that client) an OpenAI-compatible endpoint
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_STORE = "sqlite:///.cache/playground/playground.db"
DEFAULT_UI_DIST = Path(__file__).resolve().parents[2] / "ui" / "dist"
"""apps/playground/ui/dist in a checkout, where `npm run build` puts the UI."""


class SettingsError(ValueError):
    """An environment variable holds a value the playground cannot use; the message says which
    and what to set instead."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server, the worker and `dev` are configured with."""

    store_url: str = DEFAULT_STORE
    tenant: str = "default"
    host: str = "127.0.0.1"
    port: int = 3000
    lease_seconds: float = 15.0
    demo_delay: float = 0.03
    ui_dist: Path = DEFAULT_UI_DIST
    openai_api_key: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """The settings `environ` gives; `SettingsError` naming the first bad variable."""
        return cls(
            store_url=environ.get("PSYCH_STORE") or DEFAULT_STORE,
            tenant=environ.get("PSYCH_TENANT") or "default",
            host=environ.get("PLAYGROUND_HOST") or "127.0.0.1",
            port=_port(environ.get("PLAYGROUND_PORT")),
            lease_seconds=_seconds(environ, "PLAYGROUND_LEASE_SECONDS", 15.0, minimum=1.0),
            demo_delay=_seconds(environ, "PLAYGROUND_DEMO_DELAY", 0.03, minimum=0.0),
            ui_dist=Path(environ.get("PLAYGROUND_UI_DIST") or DEFAULT_UI_DIST),
            openai_api_key=environ.get("OPENAI_API_KEY") or None,
        )

    @property
    def model_kind(self) -> str:
        """``openai`` when an API key is set, else ``demo`` (offline and deterministic)."""
        return "openai" if self.openai_api_key else "demo"

    @property
    def loopback_only(self) -> bool:
        """Whether `host` keeps the server to this machine."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a host name: it may resolve to anything


def _port(text: str | None) -> int:
    if not text:
        return 3000
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise SettingsError(f"PLAYGROUND_PORT is {text!r}: set it to a port number (0 to 65535)")
    return port


def _seconds(environ: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    text = environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= minimum):
        raise SettingsError(f"{name} is {text!r}: set it to a number of seconds >= {minimum}")
    return value
