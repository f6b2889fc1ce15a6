"""Where the consumer's rebalance listener runs: never while the user holds a batch.

How this works: the group driver performs the member's callback actions on its own task, so
without a gate a revocation could run at any ``await`` of the user's code — after
``getmany`` returned records of a partition and before the user had processed them; the
user then holds records of a partition it no longer owns, and the member has already told
the coordinator it gave the partition up, so the next owner consumes the same records
meanwhile. Kafka runs the listener inside ``poll()`` only (ConsumerRebalanceListener's
contract), so a batch is processed before the revocation of its partitions is acknowledged.

``getmany`` marks the user as *holding* the records it returns; a callback that arrives
while the user holds a batch is queued, and the driver waits for it (the member's next
step, the acknowledgement, waits with it). The user's next ``getmany`` (or ``close``)
``release``s: it runs the queued callbacks on the user's task, before it hands anything
out. While the user does not hold a batch (before the first records, inside ``getmany``,
after ``close``), callbacks run at once on the driver's task, as before.

The driver sends no heartbeat while it waits (the member's step is not finished), so the
wait is bounded: after ``limit_s`` (the consumer gives half its session timeout) the
callback runs on the driver's task after all, as it did before the gate — a user that
holds one batch that long is late for the group either way, and being fenced for it
would cost more (everything lost) than one revocation mid-batch.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable

Callback = Callable[[], Awaitable[None]]


class ListenerGate:
    """Holds rebalance callbacks back while the user holds a batch; see the module comment."""

    def __init__(self, limit_s: float | None = None) -> None:
        self.holding = False
        self.limit_s = limit_s
        self._queued: collections.deque[tuple[Callback, asyncio.Future[None]]] = (
            collections.deque())

    @property
    def waiting(self) -> int:
        """How many callbacks wait for the user's next poll."""
        return len(self._queued)

    async def run(self, callback: Callback) -> None:
        """From the driver: run ``callback`` now, or after the user's next poll."""
        if not self.holding:
            await callback()
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (callback, done)
        self._queued.append(entry)
        try:
            async with asyncio.timeout(self.limit_s):
                await asyncio.shield(done)
            return
        except TimeoutError:
            if entry not in self._queued:   # a poll took it meanwhile and runs it now
                await done
                return
            self._queued.remove(entry)
        except asyncio.CancelledError:
            done.cancel()   # the driver stopped: release skips it
            raise
        await callback()

    async def release(self) -> None:
        """From the user's poll or close: the batch is processed; run what waited for it.
        A callback's failure goes to the driver that asked for it, as before the gate."""
        self.holding = False
        while self._queued:
            callback, done = self._queued.popleft()
            if done.done():   # the driver stopped waiting (it was cancelled)
                continue
            try:
                await callback()
            except Exception as exc:   # noqa: BLE001 - handed to the waiting driver
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(None)
