"""Group commit: many appends, one fsync, then every waiting answer goes out.

How this works: a handler appends to a log (cheap, buffered) and awaits
`durable(log, end)`. One background task takes every log with waiters and runs their
`sync()` one after the other in a single worker-thread job (the storage layer allows
appends to continue meanwhile); as each log's fsync returns, the waiters whose end offset
its durable end covers are released on the loop at once. Requests that arrive while a round
runs are covered by the next one, so under load one fsync per log acknowledges many
requests, and one thread hop serves every partition written meanwhile.

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
from typing import Any, Protocol

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
    def __init__(self, policy: FsyncPolicy, fsync_seconds: Any = None) -> None:
        self.policy = policy
        self._waiters: dict[int, tuple[SyncableLog, list[tuple[int, asyncio.Future]]]] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._interval_task: asyncio.Task | None = None
        self._dirty: dict[int, SyncableLog] = {}
        self.failed: BaseException | None = None
        # How long each sync took (a histogram with `observe(seconds)`, for /metrics), measured
        # in the worker thread around it; None: not measured.
        self.fsync_seconds = fsync_seconds

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
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            batch, self._waiters = self._waiters, {}
            # One trip to a worker thread per round, whatever the number of logs.
            await asyncio.to_thread(self._sync_round, loop, list(batch.values()))

    def _sync_round(self, loop: asyncio.AbstractEventLoop,
                    entries: list[tuple[SyncableLog, list[tuple[int, asyncio.Future]]]]) -> None:
        """(worker thread) fsync each log in turn; each log's waiters are settled on the loop
        as soon as its own fsync is done, not at the end of the round."""
        for target, waiters in entries:
            try:
                outcome: int | BaseException = self._sync(target)
            except BaseException as exc:  # noqa: BLE001 (settled on the loop)
                outcome = exc
            loop.call_soon_threadsafe(self._settle, target, waiters, outcome)

    def _settle(self, target: SyncableLog, waiters: list[tuple[int, asyncio.Future]],
                outcome: int | BaseException) -> None:
        """(loop) Release the waiters an fsync covered; fail them if it failed."""
        if isinstance(outcome, BaseException):
            if isinstance(outcome, NOT_OURS):
                error: BaseException = outcome
            else:  # an fsync failure is final (storage contract)
                log.critical("fsync failed, no further writes can be acknowledged: %s", outcome)
                self.failed = outcome
                error = RuntimeError(f"storage failed: {outcome}")
            for _, fut in waiters:
                if not fut.done():
                    fut.set_exception(error)
            return
        pending = []
        for end, fut in waiters:
            if end <= outcome:
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
        if self.fsync_seconds is None:
            return target.sync()
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
