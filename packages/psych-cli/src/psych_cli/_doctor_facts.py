"""What `psych doctor` reads off this process's environment: the installed distributions and
SDKs, the default egress policy, and the telemetry settings.

Nothing here connects anywhere or writes anything: it reads package metadata, the
environment, and the defaults of `psych_runtime.EgressPolicy`.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import ipaddress
import platform
import sys
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psych_runtime

PROJECT = (
    "psych-core",
    "psych-runtime",
    "psych-cli",
    "psych-adapter-kit",
    "psych-store-sqlite",
    "psych-store-postgres",
    "psych-store-mysql",
    "psych-store-dynamodb",
    "psych-blob-s3",
    "psych-sandbox-namespaces",
    "psych-sandbox-docker",
    "psych-telemetry-otel",
)
"""Every distribution of the project, in the order the report lists them."""

SDKS = {
    "mcp": "MCP servers as tool sources (psych_runtime.mcp)",
    "a2a-sdk": "A2A peers as tool sources, runs served to A2A clients (psych_runtime.a2a)",
    "opentelemetry-api": "traces and metrics of runs (with psych-telemetry-otel)",
    "opentelemetry-sdk": "exporting them where OTEL_* settings say (with psych-telemetry-otel)",
}
"""The optional SDKs that switch a feature on, and the feature."""


def installed_version(distribution: str) -> str | None:
    """The installed version of `distribution`, or None when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True, slots=True)
class Installed:
    """The interpreter, the project's distributions and the optional SDKs, with versions
    (None: not installed)."""

    python: str
    implementation: str
    executable: str
    distributions: dict[str, str | None]
    sdks: dict[str, str | None]


def installed() -> Installed:
    """What is installed in this interpreter's environment."""
    return Installed(
        python=platform.python_version(),
        implementation=platform.python_implementation(),
        executable=sys.executable,
        distributions={name: installed_version(name) for name in PROJECT},
        sdks={name: installed_version(name) for name in SDKS},
    )


# -- egress ------------------------------------------------------------------------------------

# One address of each kind the policy tells apart. The verdict on each is the policy's own
# (`EgressPolicy.address_refusal`), so the report follows the class if its defaults change.
_EXAMPLES = (
    ("public", "8.8.8.8"),
    ("loopback", "127.0.0.1"),
    ("loopback", "::1"),
    ("private", "10.0.0.1"),
    ("link-local", "169.254.169.254"),
)


@dataclass(frozen=True, slots=True)
class AddressVerdict:
    """What the default policy says of one example address: None when it may be reached."""

    kind: str
    address: str
    refusal: str | None


@dataclass(frozen=True, slots=True)
class EgressFacts:
    """`EgressPolicy()`: its fields as constructed, and its verdict on one address per kind."""

    defaults: dict[str, Any]
    addresses: tuple[AddressVerdict, ...]

    @property
    def any_host(self) -> bool:
        """Whether the host allowlist lets every host through (addresses are still checked)."""
        return self.defaults.get("allow_hosts") is None


def egress_facts() -> EgressFacts:
    """What a runtime built without an `egress` policy lets out (`Runtime.egress` is None:
    `EgressPolicy()`), read from the class, never restated."""
    policy = psych_runtime.EgressPolicy()
    defaults = {
        field.name: getattr(policy, field.name)
        for field in dataclasses.fields(policy)
        if field.init
    }
    addresses = tuple(
        AddressVerdict(kind, address, policy.address_refusal(ipaddress.ip_address(address)))
        for kind, address in _EXAMPLES
    )
    return EgressFacts(defaults, addresses)


# -- telemetry ---------------------------------------------------------------------------------

EXPORTER_SETTINGS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_SERVICE_NAME",
)
"""The OpenTelemetry settings the report names, set or not."""

# Values that say where or how, never who: shown as they are. Endpoints are shown without
# their user, password, query and fragment, which may carry credentials. Every other OTEL_*
# variable (OTEL_EXPORTER_OTLP_HEADERS above all: it carries API keys) is only said to be set.
_SHOWN = frozenset(
    {
        "OTEL_TRACES_EXPORTER",
        "OTEL_METRICS_EXPORTER",
        "OTEL_LOGS_EXPORTER",
        "OTEL_SERVICE_NAME",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_SDK_DISABLED",
    }
)
_ENDPOINTS = frozenset(
    {
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    }
)
SET = "set"
"""What the report shows for a variable whose value it never prints."""

CONFIGURED = "configured"
NO_EXPORTER = "installed, no exporter configured"
NOT_INSTALLED = "not installed"


@dataclass(frozen=True, slots=True)
class TelemetryFacts:
    """Whether runs' telemetry can be exported from this environment.

    Attributes:
        state: `CONFIGURED`, `NO_EXPORTER` or `NOT_INSTALLED`.
        distributions: psych-telemetry-otel and opentelemetry-sdk, with versions.
        settings: every OTEL_* variable that is set, by name, with its value when the value
            is safe to show and `SET` otherwise.
        missing: the names of `EXPORTER_SETTINGS` that are not set.
    """

    state: str
    distributions: dict[str, str | None]
    settings: dict[str, str]
    missing: tuple[str, ...]


def telemetry_facts(environ: Mapping[str, str]) -> TelemetryFacts:
    """How telemetry stands, from what is installed and the OTEL_* variables in `environ`."""
    distributions = {
        name: installed_version(name) for name in ("psych-telemetry-otel", "opentelemetry-sdk")
    }
    settings = {
        name: _shown(name, value)
        for name, value in sorted(environ.items())
        if name.startswith("OTEL_") and value
    }
    state = telemetry_state(installed=None not in distributions.values(), environ=environ)
    missing = tuple(name for name in EXPORTER_SETTINGS if name not in settings)
    return TelemetryFacts(state, distributions, settings, missing)


def telemetry_state(*, installed: bool, environ: Mapping[str, str]) -> str:
    """`CONFIGURED` when the exporter is installed and an OTEL_* setting says where traces
    go, `NO_EXPORTER` when it is installed without one, `NOT_INSTALLED` otherwise."""
    if not installed:
        return NOT_INSTALLED
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":  # exporting turned off, whatever the endpoints say
        return NO_EXPORTER
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if exporter or any(environ.get(name) for name in endpoints):
        return CONFIGURED
    return NO_EXPORTER


def _shown(name: str, value: str) -> str:
    if name in _SHOWN:
        return value
    if name in _ENDPOINTS:
        parts = urllib.parse.urlsplit(value)
        if parts.scheme and parts.hostname:
            host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
            port = _port(parts)
            return f"{parts.scheme}://{host}{'' if port is None else f':{port}'}{parts.path}"
    return SET


def _port(parts: urllib.parse.SplitResult) -> int | None:
    try:
        return parts.port
    except ValueError:  # a port that is not a number: leave it out rather than fail
        return None
