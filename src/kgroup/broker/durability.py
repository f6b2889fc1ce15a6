"""Group commit: many appends, one fsync, then every waiting answer goes out.

How this works: a handler appends to a log (cheap, buffered) and awaits
`durable(log, end)`. One background task takes every log with waiters, runs their `sync()`
in a worker thread (the storage layer allows appends to continue meanwhile), and releases
each waiter whose end offset the returned durable end covers. Requests that arrive while an
fsync runs are covered by the next one, so under load one fsync acknowledges many requests.

Policy (`FsyncPolicy`): "always" waits for the fsync; "interval:<ms>" and "never" only flush
to the kernel before answering (that survives kill -9 of the broker, not a power cut), and
"interval" also syncs in the background every <ms>.

A log this node no longer owns (fenced: another node took it over; or closed after a hand-
over) fails only its own waiters, with that error; any other sync failure is final.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from kgroup.broker.request_stats import FSYNC_BUCKETS, Buckets
from kgroup.storage import FsyncPolicy
from kgroup.storage.errors import FencedError, LogClosedError

# Errors of one log that lost its owner or was closed: not a failure of the storage.
NOT_OURS = (FencedError, LogClosedError)

log = logging.getLogger("kgroup.broker.durability")


class SyncableLog(Protocol):
    @property
    def durable_end(self) -> int: ...

    def flush(self) -> None: ...

    def sync(self) -> int: ...


class Durability:
    def __init__(self, policy: FsyncPolicy) -> None:
        self.policy = policy
        self._waiters: dict[int, tuple[SyncableLog, list[tuple[int, asyncio.Future]]]] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._interval_task: asyncio.Task | None = None
        self._dirty: dict[int, SyncableLog] = {}
        self.failed: BaseException | None = None
        # How long each sync took (for /metrics), measured in the worker thread around it.
        self.fsync_seconds = Buckets(FSYNC_BUCKETS)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="kgroup-group-commit")
        if self.policy.mode == "interval":
            self._interval_task = asyncio.create_task(self._interval(), name="kgroup-interval-sync")

    async def durable(self, target: SyncableLog, end: int) -> None:
        """Return once everything below offset `end` of `target` is durable per the policy."""
        if self.failed is not None:
            raise RuntimeError(f"storage failed: {self.failed}")
        if not self.policy.sync_before_answer:
            target.flush()
            if self.policy.mode == "interval":
                self._dirty[id(target)] = target
            return
        if target.durable_end >= end:
            return
        fut = asyncio.get_running_loop().create_future()
        entry = self._waiters.get(id(target))
        if entry is None:
            self._waiters[id(target)] = (target, [(end, fut)])
        else:
            entry[1].append((end, fut))
        self._wakeup.set()
        await fut

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            batch, self._waiters = self._waiters, {}
            for target, waiters in batch.values():
                try:
                    durable_end = await asyncio.to_thread(self._sync, target)
                except NOT_OURS as exc:
                    for _, fut in waiters:
                        if not fut.done():
                            fut.set_exception(exc)
                    continue
                except BaseException as exc:  # an fsync failure is final (storage contract)
                    log.critical("fsync failed, no further writes can be acknowledged: %s", exc)
                    self.failed = exc
                    for _, fut in waiters:
                        if not fut.done():
                            fut.set_exception(RuntimeError(f"storage failed: {exc}"))
                    continue
                pending = []
                for end, fut in waiters:
                    if end <= durable_end:
                        if not fut.done():
                            fut.set_result(None)
                    else:
                        pending.append((end, fut))
                if pending:  # appended after the sync began; next round
                    self._waiters.setdefault(id(target), (target, []))[1].extend(pending)
                    self._wakeup.set()

    async def _interval(self) -> None:
        while True:
            await asyncio.sleep(self.policy.interval_ms / 1000)
            dirty, self._dirty = self._dirty, {}
            for target in dirty.values():
                try:
                    await asyncio.to_thread(self._sync, target)
                except NOT_OURS:
                    pass

    def _sync(self, target: SyncableLog) -> int:
        started = time.perf_counter()
        try:
            return target.sync()
        finally:
            self.fsync_seconds.observe(time.perf_counter() - started)

    async def close(self) -> None:
        """Sync whatever is dirty and stop the background tasks."""
        for task in (self._task, self._interval_task):
            if task is not None:
                task.cancel()
        for target, waiters in list(self._waiters.values()):
            try:
                target.sync()
                outcome = None
            except NOT_OURS as exc:
                outcome = exc
            for _, fut in waiters:
                if not fut.done():
                    fut.set_result(None) if outcome is None else fut.set_exception(outcome)
        for target in self._dirty.values():
            try:
                target.sync()
            except NOT_OURS:
                pass
