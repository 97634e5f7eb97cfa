"""psych_playground: the example console of Psych Runtime.

A FastAPI server (the API under /api, and the browser UI) and a worker, both on the library's
public surface, sharing one store: publish agents and workflows, chat with them, approve and
answer what their runs wait for, and follow each run's log, timeline and report live.

    python -m psych_playground dev       the server and a worker, on SQLite, offline
    python -m psych_playground serve     the server alone
    python -m psych_playground worker    a worker alone (start as many as you like)

An example application: it is not published, and it is not for the internet (no
authentication; it listens on 127.0.0.1 unless told otherwise).
"""

from psych_playground.app import create_app
from psych_playground.settings import Settings

__all__ = ["Settings", "create_app"]
