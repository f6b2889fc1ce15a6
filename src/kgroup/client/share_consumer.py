"""kgroup's asyncio share consumer (KIP-932): queue-style consumption in a share group.

How this works: a background task drives the pure ``ShareMemberMachine`` (member/
share_member.py): it sends ShareGroupHeartbeat to the group's coordinator when the machine
says so and feeds it the answers, so the member's assignment is always the coordinator's
latest. ``poll`` sends one ShareFetch to the leader of each assigned partition, carrying the
acknowledgements decided since the last request; the broker hands back whole record batches
with the offset ranges this member acquired, and only those records (with their delivery
counts) are returned. Each leader has its own share session: epoch 0 opens it, each answer
moves it on, -1 closes it on ``close``; a session the broker lost starts again at 0 (the
records it held were released with it, so their pending acknowledgements are dropped).

Acknowledgement modes (``share.acknowledgement.mode``): ``implicit`` (the default) accepts
every record of a poll when the next poll, ``commit_sync`` or ``close`` comes; ``explicit``
sends only what ``acknowledge`` decided, and a poll with records still undecided raises.
"""

from __future__ import annotations

import asyncio
import enum
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from kgroup.client.cluster import ClusterClient, request_fields
from kgroup.client.errors import BrokerError, KafkaClientError
from kgroup.client.fetcher import decode
from kgroup.client.lifecycle import AsyncClient
from kgroup.client.records import TopicPartition
from kgroup.client.records_admin import FetchedRecord
from kgroup.client.security import ClientSecurity
from kgroup.error_codes import ErrorCode
from kgroup.kafka_uuid import random_uuid_text
from kgroup.member.actions import Fatal
from kgroup.member.classic_events import Close, Subscribe, Tick
from kgroup.member.share_member import (
    SendShareGroupHeartbeat,
    ShareAcks,
    ShareGroupHeartbeatAnswered,
    ShareGroupHeartbeatFailed,
    ShareMemberMachine,
    ShareMemberState,
)
from kgroup.wire.api_keys import ApiKey

__all__ = ["AcknowledgeType", "ShareConsumer", "ShareConsumerError", "ShareRecord"]

_SESSION_LOST = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})
MAX_WAIT_MS = 500


class AcknowledgeType(enum.IntEnum):
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


class ShareConsumerError(Exception):
    """The share consumer cannot go on (a fatal group error), or was misused."""


@dataclass(frozen=True, slots=True)
class ShareRecord(FetchedRecord):
    """A fetched record as a share consumer is handed it, with how many times it has been
    delivered (1 the first time)."""

    delivery_count: int = 1


@dataclass(slots=True)
class _Session:
    """This member's share session with one leader."""

    epoch: int = 0
    partitions: set[tuple[str, int]] = field(default_factory=set)    # (topic id, partition)


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ShareConsumer(AsyncClient):
    """A member of a share group; use ``async with``."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.group_id = str(config["group.id"])
        self.mode = str(config.get("share.acknowledgement.mode", "implicit"))
        if self.mode not in ("implicit", "explicit"):
            raise ValueError("share.acknowledgement.mode must be implicit or explicit")
        self.max_records = int(config.get("max.poll.records", 500))
        self.cluster = ClusterClient(str(config.get("bootstrap.servers", "127.0.0.1:9092")),
                               client_id=str(config.get("client.id", "kgroup-share")),
                               security=ClientSecurity.from_settings(config))
        member_id = random_uuid_text(os.urandom)
        self.member = ShareMemberMachine(member_id, int(config.get("retry.backoff.ms", 100)))
        self.acks = ShareAcks()
        self._sessions: dict[int, _Session] = {}
        self._names: dict[str, str] = {}                     # topic id -> name
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._failed: ErrorCode | None = None
        self._closed = False

    async def start(self) -> None:
        """Heartbeat (join the share group, then keep its assignment) in the background."""
        self._task = asyncio.create_task(self._heartbeats(), name="kgroup-share-heartbeat")

    @property
    def member_id(self) -> str:
        return self.member.member_id

    # ---- membership ----------------------------------------------------------------------------

    def subscribe(self, topics: list[str]) -> None:
        self._act(self.member.handle(Subscribe(tuple(topics), _now_ms())))

    def assignment(self) -> list[TopicPartition]:
        return sorted(TopicPartition(self._names.get(t, t), p) for t, ps in self.member.assignment for p in ps)

    def _act(self, actions: list[object]) -> None:
        """Carry out what the member machine asked for, and wake whoever waits on it."""
        for action in actions:
            if isinstance(action, SendShareGroupHeartbeat):
                asyncio.get_running_loop().create_task(self._heartbeat(action))
            elif isinstance(action, Fatal):
                self._failed = action.error
        self._wake.set()

    async def _heartbeat(self, send: SendShareGroupHeartbeat) -> None:
        try:
            resp = await self.cluster.call_coordinator(
                self.group_id, ApiKey.SHARE_GROUP_HEARTBEAT,
                request_fields(group_id=self.group_id, member_id=self.member.member_id, member_epoch=send.member_epoch,
                               rack_id=None, subscribed_topic_names=None if send.subscribed_topic_names is None
                               else list(send.subscribed_topic_names)),
                timeout=10)
        except Exception:  # noqa: BLE001 (a lost connection, a moved coordinator: try again later)
            self._act(self.member.handle(ShareGroupHeartbeatFailed(_now_ms())))
            return
        assignment = None
        if resp.assignment is not None:
            assignment = tuple(sorted((str(tp.topic_id), tuple(sorted(tp.partitions)))
                                      for tp in resp.assignment.topic_partitions))
        self._act(self.member.handle(ShareGroupHeartbeatAnswered(
            ErrorCode(int(resp.error_code)), _now_ms(), int(resp.member_epoch),
            int(resp.heartbeat_interval.total_seconds() * 1000), assignment)))

    async def _heartbeats(self) -> None:
        while True:
            deadline = self.member.next_deadline()
            wait = None if deadline is None else max(0.0, (deadline - _now_ms()) / 1000)
            self._wake.clear()
            try:
                async with asyncio.timeout(wait):   # not wait_for: it can drop close()'s cancellation
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._act(self.member.handle(Tick(_now_ms())))

    # ---- consuming -----------------------------------------------------------------------------

    def acknowledge(self, record: ShareRecord, kind: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Decide about a record of the last poll (explicit mode); sent with the next request."""
        self.acks.acknowledge((record.topic, record.partition), record.offset, int(kind))

    async def poll(self, timeout: float = 1.0) -> list[ShareRecord]:
        """The records acquired for this member, waiting up to `timeout` seconds for some."""
        if self._failed is not None:
            raise ShareConsumerError(f"the share group member failed: {self._failed.name}")
        if self.mode == "implicit":
            self.acks.accept_undecided(AcknowledgeType.ACCEPT)
        elif self.acks.undecided():
            raise ShareConsumerError("explicit mode: acknowledge every record of the last poll before polling again")
        deadline = time.monotonic() + timeout
        while True:
            if self.member.state is ShareMemberState.STABLE and self.member.assignment:
                records = await self._fetch_all(min(MAX_WAIT_MS, max(0, int((deadline - time.monotonic()) * 1000))))
                if records or time.monotonic() >= deadline:
                    return records
            else:
                if time.monotonic() >= deadline:
                    return []
                self._wake.clear()
                try:
                    async with asyncio.timeout(min(0.1, max(0.0, deadline - time.monotonic()))):
                        await self._wake.wait()
                except TimeoutError:
                    pass

    async def _routes(self) -> dict[int, list[tuple[str, int]]]:
        """Assigned (topic id, partition) grouped by leader node."""
        assigned = [(t, p) for t, ps in self.member.assignment for p in ps]
        if any(t not in self._names for t, _ in assigned):
            md = await self.cluster.metadata(self.member.topics)
            self._names.update({str(i.topic_id): name for name, i in md.topics.items() if i.topic_id is not None})
        by_node: dict[int, list[tuple[str, int]]] = {}
        for topic_id, partition in assigned:
            name = self._names.get(topic_id)
            if name is None:
                continue
            by_node.setdefault(await self.cluster.leader(name, partition), []).append((topic_id, partition))
        return by_node

    async def _fetch_all(self, max_wait_ms: int) -> list[ShareRecord]:
        try:
            by_node = await self._routes()
        except (KafkaClientError, OSError, asyncio.TimeoutError):
            # No broker answers metadata right now (it restarts, it moved): poll again later.
            await asyncio.sleep(0.1)
            return []
        for node in list(self._sessions):
            if node not in by_node:
                by_node[node] = []                          # forget what moved away
        results = await asyncio.gather(*(self._fetch(node, pids, max_wait_ms) for node, pids in by_node.items()),
                                       return_exceptions=True)
        out: list[ShareRecord] = []
        for result in results:
            if isinstance(result, (KafkaClientError, OSError, asyncio.TimeoutError)):
                await asyncio.sleep(0.05)                       # a lost leader: metadata again next time
                continue
            if isinstance(result, BaseException):
                raise result                                    # a bug of ours: never hide it
            out.extend(result)
        return out

    def _ack_topics(self, pids: set[tuple[str, int]], runs: dict) -> dict[str, list[dict]]:
        topics: dict[str, list[dict]] = {}
        for topic_id, partition in sorted(pids):
            batches = [dict(first_offset=f, last_offset=la, acknowledge_types=[k])
                       for f, la, k in runs.get((self._names.get(topic_id, topic_id), partition), [])]
            topics.setdefault(topic_id, []).append(dict(partition_index=partition, acknowledgement_batches=batches))
        return topics

    async def _fetch(self, node: int, pids: list[tuple[str, int]], max_wait_ms: int) -> list[ShareRecord]:
        session = self._sessions.setdefault(node, _Session())
        wanted = set(pids)
        names = {(self._names.get(t, t), p) for t, p in session.partitions | wanted}
        runs = self.acks.take(names) if session.epoch > 0 else {}
        if session.epoch == 0:
            adding = wanted
            forgetting: set[tuple[str, int]] = set()
        else:
            adding = (wanted - session.partitions) | {(self._tid(t), p) for t, p in runs}
            forgetting = session.partitions - wanted
        topics = self._ack_topics(adding, runs)
        forgotten: dict[str, list[int]] = {}
        for topic_id, partition in sorted(forgetting):
            forgotten.setdefault(topic_id, []).append(partition)
        conn = await self.cluster.node(node)
        resp = await self.cluster.request(conn, ApiKey.SHARE_FETCH, request_fields(
            group_id=self.group_id, member_id=self.member.member_id, share_session_epoch=session.epoch,
            max_wait=max_wait_ms, min_bytes=1, max_bytes=50 * 1024 * 1024, max_records=self.max_records,
            batch_size=self.max_records,
            topics=[dict(topic_id=uuid.UUID(t), partitions=ps) for t, ps in topics.items()],
            forgotten_topics_data=[dict(topic_id=uuid.UUID(t), partitions=ps) for t, ps in forgotten.items()]),
            timeout=max_wait_ms / 1000 + 30)
        code = ErrorCode(int(resp.error_code))
        if code in _SESSION_LOST:
            session.epoch, session.partitions = 0, set()
            return []
        if code is not ErrorCode.NONE:
            raise BrokerError(code, f"ShareFetch to node {node}", resp.error_message)
        session.epoch = 1 if session.epoch >= 2**31 - 1 else session.epoch + 1
        session.partitions = (session.partitions | wanted) - forgetting
        out: list[ShareRecord] = []
        for t in resp.responses:
            topic_id = str(t.topic_id)
            name = self._names.get(topic_id, topic_id)
            for p in t.partitions:
                if int(p.error_code) in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    self.cluster.forget_leader(name, int(p.partition_index))
                if not p.acquired_records or not p.records:
                    continue
                counts = {}
                for r in p.acquired_records:
                    for o in range(int(r.first_offset), int(r.last_offset) + 1):
                        counts[o] = int(r.delivery_count)
                tp = TopicPartition(name, int(p.partition_index))
                records, _ = decode(tp, bytes(p.records), min(counts))
                got = [ShareRecord(name, tp.partition, r.offset, r.timestamp, r.key, r.value, r.headers,
                                   counts[r.offset])
                       for r in records if r.offset in counts]
                self.acks.delivered((name, tp.partition), [r.offset for r in got])
                out.extend(got)
        return out

    def _tid(self, name: str) -> str:
        for tid, n in self._names.items():
            if n == name:
                return tid
        return name

    # ---- committing and closing ----------------------------------------------------------------

    async def commit_sync(self) -> dict[tuple[str, int], ErrorCode | None]:
        """Send the decided acknowledgements now; per partition None (done) or the error."""
        if self.mode == "implicit":
            self.acks.accept_undecided(AcknowledgeType.ACCEPT)
        return await self._acknowledge(final=False)

    async def _acknowledge(self, final: bool) -> dict[tuple[str, int], ErrorCode | None]:
        out: dict[tuple[str, int], ErrorCode | None] = {}
        for node, session in list(self._sessions.items()):
            if session.epoch == 0 and not final:
                continue
            names = {(self._names.get(t, t), p) for t, p in session.partitions}
            runs = self.acks.take(names)
            if not runs and not final:
                continue
            if session.epoch == 0:
                continue
            pids = {(self._tid(t), p) for t, p in runs}
            topics = self._ack_topics(pids, runs)
            try:
                conn = await self.cluster.node(node)
                resp = await self.cluster.request(conn, ApiKey.SHARE_ACKNOWLEDGE, request_fields(
                    group_id=self.group_id, member_id=self.member.member_id,
                    share_session_epoch=-1 if final else session.epoch,
                    topics=[dict(topic_id=uuid.UUID(t), partitions=ps) for t, ps in topics.items()]), timeout=30)
            except Exception:  # noqa: BLE001 (the broker went away: the records come back to the group)
                for t, p in runs:
                    out[(t, p)] = ErrorCode.NETWORK_EXCEPTION
                session.epoch = 0
                continue
            code = ErrorCode(int(resp.error_code))
            if code is not ErrorCode.NONE:
                for t, p in runs:
                    out[(t, p)] = code
                session.epoch = 0
                continue
            session.epoch = 0 if final else (1 if session.epoch >= 2**31 - 1 else session.epoch + 1)
            for t in resp.responses:
                name = self._names.get(str(t.topic_id), str(t.topic_id))
                for p in t.partitions:
                    err = ErrorCode(int(p.error_code))
                    out[(name, int(p.partition_index))] = None if err is ErrorCode.NONE else err
        return out

    async def close(self) -> None:
        """Accept (implicit mode) and send what is decided, close the share sessions, leave."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.mode == "implicit":
                self.acks.accept_undecided(AcknowledgeType.ACCEPT)
            await self._acknowledge(final=True)
            self._act(self.member.handle(Close(_now_ms())))
            for _ in range(50):
                if self.member.state in (ShareMemberState.UNSUBSCRIBED, ShareMemberState.FATAL):
                    break
                await asyncio.sleep(0.02)
        finally:
            if self._task is not None:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
            await self.cluster.close()
