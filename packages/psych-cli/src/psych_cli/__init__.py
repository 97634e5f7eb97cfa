"""psych_cli: the `psych` command of Psych Runtime.

``psych new`` writes a project you own, ``psych skills install`` gives your coding agent one
skill per feature, ``psych inspect`` and ``psych runs`` read runs back from any store, and
``psych doctor`` checks a deployment (what is installed, the store, sandboxes, egress,
telemetry). The command never runs an agent; nothing imports this package (it is a leaf, like
an app).
"""

from psych_cli._app import app
from psych_cli._exit import ExitCode

__all__ = ["ExitCode", "app", "main"]


def main() -> None:
    """The console script: ``psych``."""
    app()


def _claim_exports() -> None:
    # Exports report this package as their home: users see one public name for each.
    ExitCode.__module__ = __name__


_claim_exports()
