"""Group commit: requests waiting for durability share fsyncs, and none is answered early."""

from __future__ import annotations

import asyncio
import threading

from kgroup.broker.durability import Durability
from kgroup.storage import FsyncPolicy


class SlowLog:
    """A log whose fsync blocks until the test opens the gate; appends go on meanwhile."""

    def __init__(self) -> None:
        self.end = 0
        self.durable_end = 0
        self.syncs = 0
        self.flushes = 0
        self.gate = threading.Event()

    def append(self) -> int:
        self.end += 1
        return self.end

    def flush(self) -> None:
        self.flushes += 1

    def sync(self) -> int:
        self.syncs += 1
        end = self.end                    # what this fsync covers: appends made before it began
        assert self.gate.wait(10)
        self.durable_end = max(self.durable_end, end)
        return end


async def _until(condition) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never held")


def test_requests_arriving_during_an_fsync_share_the_next_one():
    async def go():
        durability = Durability(FsyncPolicy.parse("always"))
        durability.start()
        log = SlowLog()
        first = asyncio.create_task(durability.durable(log, log.append()))
        await _until(lambda: log.syncs == 1)                     # the first fsync is running
        rest = [asyncio.create_task(durability.durable(log, log.append())) for _ in range(99)]
        for _ in range(5):
            await asyncio.sleep(0)
        assert not any(t.done() for t in [first, *rest])          # nobody answered before its fsync
        log.gate.set()
        await asyncio.wait_for(asyncio.gather(first, *rest), 10)
        await durability.close()
        return log

    log = asyncio.run(go())
    assert log.syncs == 2                 # 100 requests, 2 fsyncs: the first, then one for the other 99
    assert log.durable_end == 100


def test_never_policy_flushes_to_the_kernel_and_does_not_fsync():
    async def go():
        durability = Durability(FsyncPolicy.parse("never"))
        durability.start()
        log = SlowLog()
        await asyncio.wait_for(asyncio.gather(*[durability.durable(log, log.append()) for _ in range(10)]), 5)
        await durability.close()
        return log

    log = asyncio.run(go())
    assert log.syncs == 0 and log.flushes == 10


def test_one_round_syncs_every_log_and_releases_each_as_its_fsync_ends():
    async def go():
        durability = Durability(FsyncPolicy.parse("always"))
        durability.start()
        logs = [SlowLog() for _ in range(3)]
        threads = set()
        for one in logs:
            sync = one.sync
            one.sync = lambda sync=sync: (threads.add(threading.get_ident()), sync())[1]
        waits = [asyncio.create_task(durability.durable(one, one.append())) for one in logs]
        await _until(lambda: logs[0].syncs == 1)
        assert not any(t.done() for t in waits)
        logs[0].gate.set()
        await asyncio.wait_for(waits[0], 10)                   # released before the others' fsyncs end
        assert not waits[1].done() and not waits[2].done()
        logs[1].gate.set()
        logs[2].gate.set()
        await asyncio.wait_for(asyncio.gather(*waits), 10)
        await durability.close()
        return logs, threads

    logs, threads = asyncio.run(go())
    assert [one.syncs for one in logs] == [1, 1, 1] and len(threads) == 1   # one worker job for all
