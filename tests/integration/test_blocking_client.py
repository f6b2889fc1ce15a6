"""The client from blocking code (``kgroup.client.blocking``) against a real `kgroup serve`."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kgroup.client import Consumer
from kgroup.client.admin import EARLIEST, LATEST
from kgroup.client.blocking import BlockingAdmin, LoopThread
from kgroup.client.errors import GroupNotEmpty
from tests.integration.clients import create_topic, produce_keyed

pytestmark = pytest.mark.integration


def test_loop_thread_runs_coroutines_for_several_threads_and_times_out():
    loop = LoopThread()
    try:
        results: list[int] = []

        async def square(n: int) -> int:
            await asyncio.sleep(0.01)
            return n * n

        threads = [threading.Thread(target=lambda n=n: results.append(loop.run(square(n))))
                   for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == [n * n for n in range(8)]
        with pytest.raises(TimeoutError):
            loop.run(asyncio.sleep(10), timeout=0.05)
        # A task left running on the loop is cancelled by close().
        loop.run(_spawn_forever())
    finally:
        loop.close()
    assert loop.loop.is_closed()


async def _spawn_forever() -> None:
    asyncio.get_running_loop().create_task(asyncio.sleep(3600))


def test_blocking_admin_offsets_and_group_commits_without_membership(broker):
    create_topic(broker.bootstrap, "blk", 3)
    produce_keyed(broker.bootstrap, "blk", 30)
    with BlockingAdmin(broker.bootstrap) as admin:
        assert admin.partition_counts(["blk", "missing"]) == {"blk": 3}
        assert "blk" in admin.partition_counts()
        latest = admin.list_offsets("blk", spec=LATEST)
        assert sum(latest.values()) == 30
        assert admin.list_offsets("blk", spec=EARLIEST) == {0: 0, 1: 0, 2: 0}
        admin.commit_group_offsets("blk-group", {("blk", 0): 4, ("blk", 2): 1})
        assert admin.group_offsets("blk-group", {"blk": [0, 1, 2]}) == {("blk", 0): 4, ("blk", 2): 1}


def test_blocking_admin_commit_is_refused_while_the_group_has_members(broker):
    create_topic(broker.bootstrap, "blk2", 1)
    loop = LoopThread()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "busy",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})

    async def join() -> None:
        await consumer.start()
        consumer.subscribe(["blk2"])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=100)

    try:
        loop.run(join())
        assert consumer.assignment()
        with BlockingAdmin(broker.bootstrap, loop=loop) as admin:
            with pytest.raises(GroupNotEmpty):
                admin.commit_group_offsets("busy", {("blk2", 0): 1})
        assert not loop.loop.is_closed()  # a shared loop is not the admin's to close
        loop.run(consumer.close())
    finally:
        loop.close()
