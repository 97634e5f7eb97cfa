"""What a playground server holds while it runs: the store, the catalog, the live channel.

All of it is opened once, when the server starts, and closed when it stops. Nothing else is
kept between requests: every answer is read from the database, so two servers on the same
store give the same answers.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from psych_playground.catalog import Catalog, seed
from psych_playground.catalog_postgres import PostgresCatalog
from psych_playground.catalog_sqlite import SqliteCatalog
from psych_playground.settings import Settings
from psych_playground.stores import (
    StoreKind,
    StoreUrl,
    open_live_channel,
    open_store,
    parse_store_url,
)
from psych_runtime import Scope, ScopedStore
from psych_runtime.ports import LiveChannel, Store


@dataclass(frozen=True, slots=True)
class Playground:
    """The server's open resources, and the settings they were opened with.

    Attributes:
        scoped: the store as the console's tenant sees it: every request goes through it.
        live: the channel the workers publish the model's words on; None on SQLite.
    """

    settings: Settings
    store_kind: StoreKind
    store: Store
    scoped: ScopedStore
    catalog: Catalog
    live: LiveChannel | None

    @property
    def lease(self) -> dt.timedelta:
        """How long a claim holds a run: the workers' lease, and the stuck rule's patience."""
        return dt.timedelta(seconds=self.settings.lease_seconds)


def open_catalog(url: StoreUrl) -> Catalog:
    """The catalog in the database `url` names, beside the store."""
    if url.kind == "sqlite":
        assert url.path is not None
        return SqliteCatalog(url.path)
    assert url.dsn is not None
    return PostgresCatalog(url.dsn, schema=url.schema)


@asynccontextmanager
async def open_playground(settings: Settings) -> AsyncIterator[Playground]:
    """Open (and migrate) the store and the catalog, seed the catalog when it is empty, open the
    live channel; close them all at the end of the block."""
    url = parse_store_url(settings.store_url)
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(url))
        await store.migrate()
        catalog = open_catalog(url)
        stack.push_async_callback(catalog.close)
        await catalog.migrate()
        await seed(catalog, settings.tenant, now=dt.datetime.now(dt.UTC))
        live = open_live_channel(url)
        if live is not None:
            stack.push_async_callback(live.close)
        yield Playground(
            settings=settings,
            store_kind=url.kind,
            store=store,
            scoped=store.scoped(Scope(tenant=settings.tenant)),
            catalog=catalog,
            live=live,
        )
