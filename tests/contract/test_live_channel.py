"""Every live channel passes the live channel contract: `LocalLiveChannel` in the box, and
`PostgresLiveChannel` on a real server, each test on channels named for a fresh schema."""

from __future__ import annotations

import pytest

from psych_runtime.conversations import LocalLiveChannel
from psych_runtime.ports import LiveChannel
from psych_runtime.testing.live_contract import LiveChannelContract
from psych_store_postgres import PostgresLiveChannel
from tests._postgres import connect, new_schema, test_dsn

pytestmark = pytest.mark.contract


class TestLocalLiveChannel(LiveChannelContract):
    async def create_channel(self) -> LocalLiveChannel:
        return LocalLiveChannel()


class TestPostgresLiveChannel(LiveChannelContract):
    async def create_channel(self) -> PostgresLiveChannel:
        (await connect()).terminate()  # fails the test at once, saying how to start the server
        # The schema only names the NOTIFY channels: nothing is created in it.
        return PostgresLiveChannel(test_dsn(), schema=new_schema("live"))

    async def close_channel(self, channel: LiveChannel) -> None:
        assert isinstance(channel, PostgresLiveChannel)
        await channel.close()
