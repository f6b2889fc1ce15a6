"""Closing a consumer stops its group task even when an event arrives with the cancellation.

The CI hang this guards against: Python 3.11's ``asyncio.wait_for`` returns the queue's event
and drops a cancellation that lands in the same loop turn, so a group task waiting for its next
event with a deadline (a subscribed member) went on running and ``close()`` waited for ever.
"""

from __future__ import annotations

import asyncio

from kgroup.client.classic_driver import ClassicGroupDriver
from kgroup.client.cluster import ClusterClient
from kgroup.client.group_driver import now_ms
from kgroup.member.classic_member import Poll, Subscribe
from kgroup.member.config import MemberConfig


async def _never_connects(host: str, port: int, client_id: str, timeout: float):
    await asyncio.Event().wait()


def never_found() -> ClusterClient:
    """A cluster whose coordinator lookup never answers: the member stays subscribed, waiting."""
    return ClusterClient("127.0.0.1:9", open_connection=_never_connects)


async def _nothing(action) -> None:
    pass


def test_stop_returns_when_an_event_arrives_with_the_cancellation():
    async def main() -> bool:
        coord = ClassicGroupDriver(never_found(), MemberConfig("g"), on_action=_nothing)
        coord.start()
        coord.post(Subscribe(("t",), now_ms()))
        for _ in range(5):
            await asyncio.sleep(0)
        assert coord.member.next_deadline() is not None     # the task waits with a deadline
        coord.post(Poll(now_ms()))                            # delivered in the same turn as...
        stopping = asyncio.ensure_future(coord.stop())        # ...the cancellation
        done, _ = await asyncio.wait([stopping], timeout=10)
        return stopping in done and coord._task.done()

    assert asyncio.run(main()), "ClassicGroupDriver.stop() did not return"
