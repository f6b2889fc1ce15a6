"""Drives a pure group member over real connections: the loop both group drivers share.

How this works: one asyncio task owns a member state machine (``ClassicMemberMachine`` or
``ConsumerMemberMachine``). It waits for the next event (an answer, a user call posted with
``post``) or the member's next deadline (then a ``Tick``), hands the event to the member and
performs the returned actions in order. Requests run as their own tasks and post their
answer back as an event, so heartbeats keep flowing while a JoinGroup waits. Callbacks and
auto-commits run inline, in the order the member asked for them.

The coordinator is the ``ClusterClient``'s: every request asks it for the coordinator's connection
(found with FindCoordinator when not known). When the member asks to find the coordinator
(it was told NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, or a request failed) the driver
drops the cluster's entry and looks it up again until found, with the cluster's backoff
(``retry.backoff.ms`` doubling to 1 s), then posts ``CoordinatorFound``.

``ClassicGroupDriver`` (classic_driver.py) and ``ConsumerGroupDriver`` (consumer_driver.py)
add the requests of their protocol.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kgroup.member import (
    ClassicMemberMachine,
    Close,
    CommitOffsets,
    ConsumerMemberMachine,
    CoordinatorFound,
    Failed,
    Fatal,
    FindCoordinator,
    MemberConfig,
    RunAssign,
    RunAssigned,
    RunLost,
    RunOnAssignment,
    RunOpaqueAssigned,
    RunOpaqueLost,
    RunOpaqueRevoked,
    RunRevoked,
    SendLeaveGroup,
    Tick,
)
from kgroup.wire.api_keys import ApiKey

from .cluster import Backoff, ClusterClient
from .connection import Connection
from .errors import KafkaClientError, KafkaConnectionError
from .lifecycle import cancel_and_wait

_MAX_BACKOFF_MS = 1_000
# Actions the driver's owner performs: callbacks, commits, the leader's assignment.
_OWNER_ACTIONS = (CommitOffsets, RunRevoked, RunAssigned, RunLost, RunOnAssignment, RunAssign,
                  RunOpaqueAssigned, RunOpaqueRevoked, RunOpaqueLost, Failed)
# Versions every classic-group broker we know speaks (librdkafka's own ceiling).
_FALLBACK = {ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3, ApiKey.HEARTBEAT: 3, ApiKey.LEAVE_GROUP: 1}


def now_ms() -> int:
    return int(time.monotonic() * 1000)


class GroupDriver:
    """The consumer's membership in one group; see the module comment. Subclasses make
    ``member`` and perform their protocol's request actions in ``_perform``."""

    member: ClassicMemberMachine | ConsumerMemberMachine

    def __init__(
        self,
        cluster: ClusterClient,
        config: MemberConfig,
        *,
        on_action: Callable[[Any], Awaitable[None]],
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.on_action = on_action
        self.backoff = Backoff(retry_backoff_ms, _MAX_BACKOFF_MS)
        self.request_timeout_s = request_timeout_ms / 1000
        self.fatal: Fatal | None = None
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._last_find = 0.0
        self._find_backoff = retry_backoff_ms / 1000
        # Highest versions to use per API: lowered when a broker that advertises a version
        # drops the connection on it (librdkafka's mock cluster advertises JoinGroup v6+ but
        # speaks up to v5).
        self._caps: dict[int, int] = {}
        self.member = self._new_member(config)

    def _new_member(self, config: MemberConfig) -> ClassicMemberMachine | ConsumerMemberMachine:
        """The member state machine this driver drives (each protocol has its own)."""
        raise NotImplementedError

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"kgroup-group-{self.config.group_id}")

    def post(self, event: Any) -> None:
        self._queue.put_nowait(event)

    async def handle_now(self, event: Any) -> None:
        """Run one event to completion here (used by close, after the task is stopped)."""
        for action in self.member.handle(event):
            await self._perform(action)

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await cancel_and_wait(self._task)

    async def close_member(self, now: int) -> None:
        """After ``stop``: hand the member ``Close`` and perform what it asks — callbacks
        always, the LeaveGroup only when it can still be sent (``can_leave``)."""
        leave = self.can_leave()
        for action in self.member.handle(Close(now)):
            if leave or not isinstance(action, SendLeaveGroup):
                await self._perform(action)

    def can_leave(self) -> bool:
        """Whether a leave request can still be sent on close (the consumer-protocol member
        decides that itself; see ``ClassicGroupDriver``)."""
        return True

    # -- the loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            deadline = self.member.next_deadline()
            wait = None if deadline is None else max(0.0, (deadline - now_ms()) / 1000)
            try:
                # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the event and
                # drops a cancellation (stop()) that lands in the same loop turn, which left
                # close() waiting for ever.
                async with asyncio.timeout(wait):
                    event = await self._queue.get()
            except TimeoutError:
                event = Tick(now_ms())
            for action in self.member.handle(event):
                await self._perform(action)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _perform(self, action: Any) -> None:
        """The actions both protocols share."""
        if isinstance(action, FindCoordinator):
            self._spawn(self._find())
        elif isinstance(action, Fatal):
            self.fatal = action
            await self.on_action(action)
        elif isinstance(action, _OWNER_ACTIONS):
            await self.on_action(action)

    # -- coordinator discovery --------------------------------------------------------------

    async def _discover(self) -> Connection:
        """The coordinator's connection, asked for until the cluster names one."""
        delays = self.backoff.delays()
        while True:
            try:
                return await self.cluster.coordinator(self.config.group_id)
            except KafkaClientError:
                await self.cluster.sleep(next(delays))

    async def _find(self) -> None:
        # Back off when rediscovering soon after the last time (a failing coordinator).
        now = time.monotonic()
        max_s = _MAX_BACKOFF_MS / 1000
        if now - self._last_find < max_s * 2:
            self._find_backoff = min(self._find_backoff * 2, max_s)
            await self.cluster.sleep(self._find_backoff)
        else:
            self._find_backoff = self.backoff.initial_ms / 2000
        self._last_find = time.monotonic()
        self.cluster.forget_coordinator(self.config.group_id)
        await self._discover()
        self.post(CoordinatorFound(now_ms()))

    # -- requests ---------------------------------------------------------------------------

    async def _request(self, api_key: int, body: Any, timeout: float, **kw: Any) -> Any:
        """One request to the coordinator; a broker that drops the connection on a version
        it advertised gets it again once at ``_FALLBACK``'s version."""
        conn = await self.cluster.coordinator(self.config.group_id)
        cap = self._caps.get(api_key)
        version = conn.choose_version(api_key, cap)
        try:
            return await self.cluster.request(conn, api_key, body, timeout=timeout,
                                              max_version=cap, **kw)
        except KafkaConnectionError:
            fallback = _FALLBACK.get(api_key)
            if fallback is None or version <= fallback or cap is not None:
                raise
            self._caps[api_key] = fallback
            conn = await self.cluster.coordinator(self.config.group_id)
            return await self.cluster.request(conn, api_key, body, timeout=timeout,
                                              max_version=fallback, **kw)
