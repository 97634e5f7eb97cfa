"""The playground's web app: the API under /api and the browser UI everywhere else.

    app = create_app(Settings.from_env(os.environ))

It admits runs and reads them back; it never runs one (the worker process does). The store,
the catalog and the live channel are opened in the lifespan; each request reads what it needs
from the database, so any number of servers can serve the same store.

It is an example, with no authentication: bound to 127.0.0.1 by default, it answers only
requests for a loopback host name (so a web page cannot reach it by rebinding a name of its
own to 127.0.0.1). Bound elsewhere, anyone who reaches it can read and steer every run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from pydantic import BaseModel
from starlette.middleware.trustedhost import TrustedHostMiddleware

from psych_playground import api_agents, api_live, api_runs, api_signals, ui
from psych_playground.deps import Ground
from psych_playground.http_errors import install_error_handlers
from psych_playground.resources import open_playground
from psych_playground.settings import Settings

LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]


class Health(BaseModel):
    ok: bool
    store: str
    model: str
    live_text: bool


def create_app(settings: Settings) -> FastAPI:
    """The app, configured by `settings`; its resources open when it starts."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_playground(settings) as ground:
            app.state.playground = ground
            yield

    app = FastAPI(
        title="Psych playground",
        summary="The example console of Psych Runtime: an example, not for the internet.",
        lifespan=lifespan,
    )
    if settings.loopback_only:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_HOSTS)
    install_error_handlers(app)

    @app.get("/api/health", tags=["health"])
    async def health(ground: Ground) -> Health:
        """What this server runs on; it reads the store, so it fails when the store is down."""
        await ground.store.get_run(settings.tenant, "health-check")
        return Health(
            ok=True,
            store=ground.store_kind,
            model=settings.model_kind,
            live_text=ground.live is not None,
        )

    for router in (api_agents.router, api_runs.router, api_signals.router, api_live.router):
        app.include_router(router)
    app.include_router(ui.router)  # last: it answers every path the API does not
    return app
