"""A request whose caller gave up leaves no unread error behind when the connection fails.

Seen at the end of a passing test run: "Future exception was never retrieved ...
KafkaConnectionError: connection to ... was closed". A caller cancelled while it waited (a
consumer closing mid-fetch) leaves its answer's future pending on purpose, so a late answer
is still matched to its correlation id; closing the connection then fails that future, and
nobody read the error.
"""

from __future__ import annotations

import asyncio
import gc
import socket

from kgroup.client.connection import Connection
from kgroup.wire import request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build


def test_a_cancelled_requests_error_is_not_reported_as_never_retrieved():
    reported: list[dict] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx))
        ours, peer = socket.socketpair()            # the peer never answers
        reader, writer = await asyncio.open_connection(sock=ours)
        conn = Connection("peer", 1, reader, writer, "t", 5.0)
        waiting = asyncio.create_task(conn._roundtrip(
            ApiKey.API_VERSIONS, 0, build(request_class(ApiKey.API_VERSIONS, 0)), 5.0))
        while not conn._pending:
            await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        await conn.close()                          # fails the abandoned future
        del waiting, conn
        gc.collect()
        peer.close()

    asyncio.run(main())
    assert not [c for c in reported if "never retrieved" in c.get("message", "")], reported
