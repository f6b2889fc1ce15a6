"""Drives the pure classic member over real connections: the consumer's group task.

How this works: one asyncio task owns a ``ClassicMemberMachine``. It waits for the next event
(a response, a user call posted with ``post``) or the member's next deadline (then a
``Tick``), hands the event to the member and performs the returned actions in order.
Requests (JoinGroup, SyncGroup, Heartbeat) run as their own tasks and post their response
back as an event, so heartbeats keep flowing while a JoinGroup waits. Callbacks and
auto-commits run inline, in the order the member asked for them. Coordinator discovery
retries with exponential backoff (``retry.backoff.ms`` doubling to 1 s) on
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS and on
connection errors.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kgroup.member import (
    ClassicMemberMachine,
    CommitOffsets,
    CoordinatorFound,
    Fatal,
    FindCoordinator,
    HeartbeatAnswered,
    JoinedMember,
    JoinGroupAnswered,
    MemberConfig,
    MetadataUpdated,
    RequestFailed,
    RunAssigned,
    RunLost,
    RunRevoked,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SyncGroupAnswered,
    Tick,
)
from kgroup.member.classic_member import Event
from kgroup.wire.versions import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP

from .admin import AdminClient, _make
from .connection import Connection
from kgroup.error_codes import ErrorCode

from .errors import KafkaClientError, KafkaConnectionError

_MAX_BACKOFF_S = 1.0
# Versions every classic-group broker we know speaks (librdkafka's own ceiling).
_FALLBACK = {JOIN_GROUP: 5, SYNC_GROUP: 3, HEARTBEAT: 3, LEAVE_GROUP: 1}


def now_ms() -> int:
    return int(time.monotonic() * 1000)


class GroupCoordinator:
    """The consumer's membership in one group; see the module comment."""

    def __init__(
        self,
        cluster: AdminClient,
        config: MemberConfig,
        *,
        on_action: Callable[[Any], Awaitable[None]],
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.member = ClassicMemberMachine(config, now_ms())
        self.on_action = on_action
        self.backoff_s = retry_backoff_ms / 1000
        self.request_timeout_s = request_timeout_ms / 1000
        self.conn: Connection | None = None
        self.fatal: Fatal | None = None
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._last_find = 0.0
        self._find_backoff = self.backoff_s
        # Highest versions to use per API: lowered when a broker that advertises a version
        # drops the connection on it (librdkafka's mock cluster advertises JoinGroup v6+ but
        # speaks up to v5).
        self._caps: dict[int, int] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"kgroup-group-{self.config.group_id}")

    def post(self, event: Event) -> None:
        self._queue.put_nowait(event)

    async def handle_now(self, event: Event) -> None:
        """Run one event to completion here (used by close, after the task is stopped)."""
        for action in self.member.handle(event):
            await self._perform(action)

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass

    async def coordinator(self) -> Connection:
        """A connection to the group coordinator (discovering it if needed)."""
        if self.conn is None or self.conn.closed:
            await self._discover()
        assert self.conn is not None
        return self.conn

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
        if isinstance(action, FindCoordinator):
            self._spawn(self._find())
        elif isinstance(action, SendJoinGroup):
            self._spawn(self._join(action))
        elif isinstance(action, SendSyncGroup):
            self._spawn(self._sync(action))
        elif isinstance(action, SendHeartbeat):
            self._spawn(self._heartbeat(action))
        elif isinstance(action, SendLeaveGroup):
            await self._leave(action)
        elif isinstance(action, Fatal):
            self.fatal = action
            await self.on_action(action)
        elif isinstance(action, (CommitOffsets, RunRevoked, RunAssigned, RunLost)):
            await self.on_action(action)

    # -- coordinator discovery --------------------------------------------------------------

    async def _discover(self) -> None:
        delay = self.backoff_s
        while True:
            try:
                info = await self.cluster.find_coordinator(self.config.group_id)
                self.conn = await self.cluster._connect(info.host, info.port)
                return
            except KafkaClientError:
                await asyncio.sleep(delay)
                delay = min(delay * 2, _MAX_BACKOFF_S)

    async def _find(self) -> None:
        # Back off when rediscovering soon after the last time (a failing coordinator).
        now = time.monotonic()
        if now - self._last_find < _MAX_BACKOFF_S * 2:
            self._find_backoff = min(self._find_backoff * 2, _MAX_BACKOFF_S)
            await asyncio.sleep(self._find_backoff)
        else:
            self._find_backoff = self.backoff_s / 2
        self._last_find = time.monotonic()
        self.conn = None
        await self._discover()
        self.post(CoordinatorFound(now_ms()))

    # -- requests ---------------------------------------------------------------------------

    async def _request(self, api_key: int, body: Any, timeout: float, **kw: Any) -> Any:
        conn = self.conn
        if conn is None or conn.closed:
            raise KafkaClientError("no coordinator connection")
        cap = self._caps.get(api_key)
        version = conn.choose_version(api_key, cap)
        try:
            return await conn.request(api_key, body, timeout=timeout, max_version=cap, **kw)
        except KafkaConnectionError:
            fallback = _FALLBACK.get(api_key)
            if fallback is None or version <= fallback or cap is not None:
                raise
            # Retry once at the fallback version on a fresh connection.
            self._caps[api_key] = fallback
            self.conn = await self.cluster._connect(conn.host, conn.port)
            return await self.conn.request(api_key, body, timeout=timeout,
                                           max_version=fallback, **kw)

    async def _join(self, a: SendJoinGroup) -> None:
        def body(cls: type) -> Any:
            return _make(cls, group_id=a.group_id, session_timeout=a.session_timeout_ms,
                         rebalance_timeout=a.rebalance_timeout_ms, member_id=a.member_id,
                         group_instance_id=a.group_instance_id, protocol_type=a.protocol_type,
                         protocols=[{"name": n, "metadata": m} for n, m in a.protocols],
                         reason=a.reason or None)

        try:
            resp = await self._request(JOIN_GROUP, body,
                                       a.rebalance_timeout_ms / 1000 + self.request_timeout_s)
        except KafkaClientError:
            self.post(RequestFailed(a.request_id, now_ms()))
            return
        code = int(resp.error_code)
        members = tuple(JoinedMember(m.member_id, getattr(m, "group_instance_id", None),
                                     bytes(m.metadata)) for m in resp.members)
        if code == 0 and resp.leader == resp.member_id and members:
            # The leader assigns: it needs partition counts of every member's topics.
            from kgroup.assignors import decode_subscription

            topics: set[str] = set()
            for m in members:
                try:
                    topics.update(decode_subscription(m.metadata).topics)
                except ValueError:
                    pass
            try:
                md = await self.cluster.metadata(sorted(topics))
                counts = tuple((t, len(info.partitions)) for t, info in sorted(md.topics.items())
                               if info.error == "NONE")
                self.post(MetadataUpdated(counts, now_ms()))
            except KafkaClientError:
                pass
        self.post(JoinGroupAnswered(
            a.request_id, ErrorCode(code), now_ms(),
            int(resp.generation_id), getattr(resp, "protocol_name", None), resp.leader,
            resp.member_id, members, bool(getattr(resp, "skip_assignment", False))))

    async def _sync(self, a: SendSyncGroup) -> None:
        def body(cls: type) -> Any:
            return _make(cls, group_id=a.group_id, generation_id=a.generation,
                         member_id=a.member_id, group_instance_id=a.group_instance_id,
                         protocol_type=a.protocol_type, protocol_name=a.protocol,
                         assignments=[{"member_id": m, "assignment": b}
                                      for m, b in a.assignments])

        try:
            resp = await self._request(SYNC_GROUP, body, self.request_timeout_s)
        except KafkaClientError:
            self.post(RequestFailed(a.request_id, now_ms()))
            return
        code = int(resp.error_code)
        self.post(SyncGroupAnswered(a.request_id, ErrorCode(code),
                                    now_ms(), bytes(resp.assignment or b"")))

    async def _heartbeat(self, a: SendHeartbeat) -> None:
        def body(cls: type) -> Any:
            return _make(cls, group_id=a.group_id, generation_id=a.generation,
                         member_id=a.member_id, group_instance_id=a.group_instance_id)

        try:
            resp = await self._request(HEARTBEAT, body, self.request_timeout_s)
        except KafkaClientError:
            self.post(RequestFailed(a.request_id, now_ms()))
            return
        code = int(resp.error_code)
        self.post(HeartbeatAnswered(a.request_id, ErrorCode(code),
                                    now_ms()))

    async def _leave(self, a: SendLeaveGroup) -> None:
        def body(cls: type) -> Any:
            return _make(cls, group_id=a.group_id, member_id=a.member_id,
                         members=[{"member_id": a.member_id,
                                   "group_instance_id": a.group_instance_id,
                                   "reason": a.reason or None}])

        try:
            await self._request(LEAVE_GROUP, body, min(5.0, self.request_timeout_s))
        except KafkaClientError:
            pass
