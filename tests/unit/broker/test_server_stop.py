"""Stopping the broker: no request is served once the node has begun to close.

A connection accepted just before the listeners close gets its task after stop() has looked
at the open connections; it used to go on serving requests after the node's data was closed
(a Metadata request then failed inside the ownership table, logged as an internal error).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

from kgroup.broker.config import BrokerConfig
from kgroup.broker.server import Server


def _api_versions_v0(correlation: int) -> bytes:
    client = b"stop-test"
    body = struct.pack(">hhih", 18, 0, correlation, len(client)) + client
    return struct.pack(">i", len(body)) + body


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def _until(condition, what: str, turns: int = 100_000) -> None:
    """Yield to the loop (no timer) until `condition` holds; fail clearly instead of hanging."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


async def _late_connection_during_stop(data_dir: Path) -> tuple[bool, bytes]:
    server = Server(BrokerConfig(data_dir=str(data_dir), listen_port=_free_port()))
    await server.start()
    # An idle client: stop() closes its connection without waiting for it.
    _, idle = await asyncio.open_connection(*server.bound)
    await _until(lambda: server.connections, "the idle connection registered")
    stopping = asyncio.ensure_future(server.stop())
    await _until(lambda: not server.servers[0].is_serving(), "stop() closed the listeners")
    # Listeners closed, stop() is waiting: a connection accepted at the last moment starts now.
    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_connection(sock=ours)
    late = asyncio.ensure_future(server._accept(reader, writer))
    await stopping
    idle.close()
    # stop() no longer waits for idle connections, so the late one may first run now: it
    # must end at once, closed unanswered.
    await asyncio.wait({late}, timeout=5)
    ended = late.done()
    theirs.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_sendall(theirs, _api_versions_v0(7))
        answer = await asyncio.wait_for(loop.sock_recv(theirs, 1 << 16), timeout=5)
    except OSError:
        answer = b""
    finally:
        theirs.close()
        late.cancel()
        await asyncio.gather(late, return_exceptions=True)
    return ended, answer


def test_a_connection_whose_task_starts_during_stop_is_closed_unanswered(tmp_path: Path) -> None:
    ended, answer = asyncio.run(_late_connection_during_stop(tmp_path / "data"))
    assert ended, "a connection was still being served after stop() returned"
    assert answer == b"", "a request was answered after the node closed"
