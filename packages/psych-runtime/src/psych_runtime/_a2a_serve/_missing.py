"""Stand-ins for the names of `psych_runtime._a2a_serve` when the ``a2a`` extra is not
installed: importing works, using one raises `ImportError` saying what to install."""

from __future__ import annotations

from typing import Any, NoReturn

ScopedFor = Any

_INSTALL = (
    "serving runs to A2A clients needs the a2a-sdk: install psych-runtime with its a2a extra "
    '(pip install --no-index --find-links "$PSYCH_WHEELHOUSE" "psych-runtime[a2a]")'
)


def agent_card(*args: Any, **kwargs: Any) -> NoReturn:
    """Needs the ``a2a`` extra."""
    raise ImportError(_INSTALL)


class RunRequestHandler:
    """Needs the ``a2a`` extra."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ImportError(_INSTALL)
