"""``python -m psych_cli``: the same as the ``psych`` command."""

from psych_cli import main

main()
