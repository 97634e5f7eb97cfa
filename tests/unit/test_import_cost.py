"""What `import psych_runtime` loads: not the A2A SDK's server side (its protobuf types,
Starlette, FastAPI and uvicorn took about a second, half of the whole import), which loads
when an app first asks for `RunRequestHandler` or `agent_card`; and not httpx (a quarter of
a second more), which loads when an `Egress` first sends a request."""

from __future__ import annotations

import subprocess
import sys

import pytest

_SERVER_SIDE = (
    "a2a",
    "fastapi",
    "starlette",
    "sse_starlette",
    "uvicorn",
    "google.protobuf",
    "httpx",
)

_PROBE = f"""
import sys

def loaded():
    return sorted(
        name for name in {_SERVER_SIDE!r}
        if any(module == name or module.startswith(name + ".") for module in sys.modules)
    )

import psych_runtime
import psych_runtime.a2a
from psych_runtime.a2a import A2AHttp, A2APeer
print(" ".join(loaded()) or "-")
from psych_runtime.a2a import RunRequestHandler, agent_card
print(" ".join(loaded()) or "-")
print(RunRequestHandler.__module__, agent_card.__module__)
print(psych_runtime.a2a.RunRequestHandler is RunRequestHandler)
import importlib.util
print(importlib.util.find_spec("a2a") is not None)
"""


def test_importing_psych_runtime_leaves_the_a2a_server_side_unloaded() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    before, after, modules, same, sdk = done.stdout.splitlines()
    assert before == "-"
    if sdk == "True":  # the a2a extra is installed: asking for the names loads the SDK
        assert "a2a" in after.split()
    else:  # without it the names are stand-ins that say what to install, and load nothing
        assert after == "-"
    assert modules == "psych_runtime.a2a psych_runtime.a2a"
    assert same == "True"


_EGRESS_PROBE = """
import sys, typing
import psych_runtime
from psych_runtime.ports import Egress, EgressResponse
egress = Egress()
print("httpx" in sys.modules)
hints = typing.get_type_hints(Egress.__init__), typing.get_type_hints(EgressResponse.__init__)
print(hints[0]["transport"], hints[1]["response"].__name__)
"""


def test_httpx_loads_when_an_egress_first_needs_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _EGRESS_PROBE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    before, hints = done.stdout.splitlines()
    assert before == "False", "import psych_runtime and making an Egress import no httpx"
    # The annotations that name httpx's types still resolve (importing it then).
    assert hints == "httpx.AsyncBaseTransport | None Response"


def test_a_name_the_a2a_room_does_not_have_is_an_attribute_error() -> None:
    import psych_runtime.a2a

    with pytest.raises(AttributeError, match="RunHandler"):
        psych_runtime.a2a.RunHandler  # type: ignore[attr-defined]  # noqa: B018
