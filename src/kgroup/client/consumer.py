"""An asyncio Kafka consumer: group subscription or manual assignment, fetch, commit.

How this works: ``Consumer`` wires three parts together over one ``ClusterClient`` (connections,
metadata, leaders, the group's coordinator). A ``ClassicGroupDriver`` task drives the pure
``ClassicMemberMachine`` (join, sync, heartbeats, rebalances) — or, with
``group.protocol=consumer``, a ``ConsumerGroupDriver`` drives the pure
``ConsumerMemberMachine`` (KIP-848: ConsumerGroupHeartbeat, server-side assignment,
incremental reconciliation, member epochs); the member's callback actions land in
``_on_action``, which changes what the ``Fetcher`` may fetch *before* the user's listener
runs (so no record of a revoked or lost partition is handed out after its callback). The
listener itself runs where Kafka runs it, never while the user holds a batch ``getmany``
returned: a ``ListenerGate`` (listener_gate.py) holds it until the next ``getmany``. The
``Fetcher`` keeps Fetch requests in flight ahead of the user; ``getmany`` / ``poll`` /
``async for`` drain its buffer and advance positions. Commits go to the coordinator with
the member's generation or member epoch (or as a "simple" consumer, generation -1, with
manual assignment), following it while it moves; auto-commit runs from ``getmany`` every
``auto.commit.interval.ms``, before every revocation and on close.

``partition.assignment.strategy`` may list assignor objects beside names: a custom
``ClientAssignor`` (``kgroup.assignors.interface``) sees every member's subscription, owned
partitions and user data and returns assignments with user data, as Kafka Streams' does.

Settings use Kafka's names (see ``settings.CONSUMER_DEFAULTS``)::

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                         "auto.offset.reset": "earliest"})
    await consumer.start()
    consumer.subscribe(["orders"])
    async for record in consumer: ...
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from kgroup.assignors import ClientAssignor
from kgroup.error_codes import ErrorCode
from kgroup.group_types import CLASSIC, CONSUMER
from kgroup.member import (
    Close,
    CommitAnswered,
    CommitOffsets,
    Failed,
    Fatal,
    MemberConfig,
    MetadataUpdated,
    Poll,
    RunAssigned,
    RunLost,
    RunOnAssignment,
    RunRevoked,
    Subscribe,
    Unsubscribe,
)
from kgroup.plugins import load_assignor_plugins
from kgroup.wire.api_keys import ApiKey

from .admin import EARLIEST, LATEST, AdminClient
from .classic_driver import ClassicGroupDriver
from .cluster import Backoff, ClusterClient, first_partition_error, request_fields
from .consumer_driver import ConsumerGroupDriver
from .errors import BrokerError, KafkaClientError
from .fetcher import Fetcher
from .group_driver import GroupDriver, now_ms
from .lifecycle import AsyncClient
from .listener_gate import ListenerGate
from .records import ConsumerRecord, OffsetAndMetadata, TopicPartition
from .security import ClientSecurity
from .settings import CONSUMER_DEFAULTS, resolve
from .transactions import GroupMetadata

__all__ = ["CommitFailedError", "Consumer", "ConsumerRebalanceListener"]

_GROUP_ERRORS = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID,
                           ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.FENCED_INSTANCE_ID,
                           ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.FENCED_MEMBER_EPOCH})
_MAX_BACKOFF_MS = 1_000


class CommitFailedError(KafkaClientError):
    """The group rebalanced (or fenced us) before the commit: the offsets were not stored."""

    hint = "the partitions moved to another member; poll again and commit what you own then"


class ConsumerRebalanceListener:
    """Override any of these; each may be a plain method or a coroutine."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Partitions are taken away; commit what you processed of them (``commit`` called
        here uses the generation that owned them, although the member is already rejoining
        or leaving)."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """Partitions are now yours (only the new ones under cooperative rebalancing)."""

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Any:
        """Partitions already belong to someone else; do not commit them. As in Kafka,
        this calls ``on_partitions_revoked`` unless overridden."""
        return self.on_partitions_revoked(lost)


class Consumer(AsyncClient):
    """An asyncio consumer; see the module comment."""

    def __init__(self, config: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        load_assignor_plugins()   # partition.assignment.strategy may name a plug-in
        self.settings = resolve(CONSUMER_DEFAULTS, config, kwargs)
        s = self.settings
        if s["group.protocol"] not in (CLASSIC.name, CONSUMER.name):
            raise ValueError("group.protocol must be 'classic' or 'consumer'")
        if s["auto.offset.reset"] not in ("earliest", "latest", "none"):
            raise ValueError("auto.offset.reset must be earliest, latest or none")
        self._assignors = _assignors(s["partition.assignment.strategy"])
        self.cluster = ClusterClient(s["bootstrap.servers"], client_id=s["client.id"],
                               timeout=s["request.timeout.ms"] / 1000,
                               security=ClientSecurity.from_settings(s),
                               backoff=Backoff(int(s["retry.backoff.ms"]), _MAX_BACKOFF_MS))
        self.admin = AdminClient(cluster=self.cluster)
        self.fetcher = Fetcher(self.cluster, s, self._resolve_positions)
        self.group: GroupDriver | None = None
        self._listener: ConsumerRebalanceListener = ConsumerRebalanceListener()
        self._topics: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None
        self._manual = False
        self._started = False
        self._closed = False
        self._fatal: Fatal | None = None
        self._failed: Failed | None = None
        self._metadata_task: asyncio.Task[None] | None = None
        self._next_auto_commit = 0.0
        self._commits: set[asyncio.Task[Any]] = set()
        self._last_committed: dict[TopicPartition, int] = {}
        # (generation, member id) that owned the partitions of a revocation callback running
        # now: commits made inside it use them, as Kafka's onPartitionsRevoked commits do.
        self._revoking: tuple[int, str] | None = None
        self._gate = ListenerGate(limit_s=s["session.timeout.ms"] / 2000)

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the cluster and start the fetch (and group) tasks."""
        if self._started:
            return
        await self.cluster.connect()
        s = self.settings
        if s["group.id"]:
            cfg = MemberConfig(
                group_id=s["group.id"], group_instance_id=s["group.instance.id"],
                session_timeout_ms=int(s["session.timeout.ms"]),
                heartbeat_interval_ms=int(s["heartbeat.interval.ms"]),
                max_poll_interval_ms=int(s["max.poll.interval.ms"]),
                assignors=self._assignors,
                auto_commit=bool(s["enable.auto.commit"]),
                retry_backoff_ms=int(s["retry.backoff.ms"]),
                server_assignor=s["group.remote.assignor"] or None)
            driver: type[GroupDriver] = (ConsumerGroupDriver if s["group.protocol"] == CONSUMER.name
                                         else ClassicGroupDriver)
            self.group = driver(self.cluster, cfg, on_action=self._on_action,
                                retry_backoff_ms=int(s["retry.backoff.ms"]),
                                request_timeout_ms=int(s["request.timeout.ms"]))
            self.group.start()
        self.fetcher.start()
        self._metadata_task = asyncio.create_task(self._refresh_metadata())
        self._next_auto_commit = time.monotonic() + s["auto.commit.interval.ms"] / 1000
        self._started = True

    async def close(self) -> None:
        """Commit (with auto-commit), revoke, leave the group (unless static), disconnect."""
        if self._closed or not self._started:
            self._closed = True
            return
        self._closed = True
        await self._gate.release()   # callbacks waiting for a poll run before we leave
        if self._metadata_task is not None:
            self._metadata_task.cancel()
        if self._commits:
            await asyncio.gather(*self._commits, return_exceptions=True)
        if self._manual and self.settings["enable.auto.commit"] and self.settings["group.id"]:
            await self._commit_positions(None, swallow=True)
        if self.group is not None:
            await self.group.stop()
            try:
                if self.group.can_leave():
                    await self.group.handle_now(Close(now_ms()))
            except KafkaClientError:
                pass
        await self.fetcher.stop()
        await self.cluster.close()

    # -- subscription and assignment --------------------------------------------------------

    def subscribe(self, topics: Iterable[str] = (), *, pattern: str | None = None,
                  listener: ConsumerRebalanceListener | None = None) -> None:
        """Join the group for ``topics`` (or every topic matching the regex ``pattern``)."""
        if self.group is None:
            raise KafkaClientError("subscribe needs a group.id", "set group.id or use assign()")
        if self._manual:
            raise KafkaClientError("this consumer uses manual assignment",
                                   "call unsubscribe() first")
        if listener is not None:
            self._listener = listener
        if pattern is not None:
            self._pattern = re.compile(pattern)
            self._topics = ()
            if self._metadata_task is not None:
                self._metadata_task.cancel()
            self._metadata_task = asyncio.create_task(self._refresh_metadata())
            return
        self._pattern = None
        self._topics = tuple(sorted(set(topics)))
        self.group.post(Subscribe(self._topics, now_ms()))

    def unsubscribe(self) -> None:
        self._pattern = None
        self._topics = ()
        if self._manual:
            self._manual = False
            self.fetcher.set_assignment(())
        elif self.group is not None:
            self.group.post(Unsubscribe(now_ms()))

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly these partitions, with no group membership."""
        if self._topics or self._pattern is not None:
            raise KafkaClientError("this consumer is subscribed", "call unsubscribe() first")
        self._manual = True
        self.fetcher.set_assignment(TopicPartition(*tp) for tp in partitions)

    def assignment(self) -> set[TopicPartition]:
        return set(self.fetcher.states)

    def subscription(self) -> set[str]:
        return set(self._topics)

    # -- the member's actions ---------------------------------------------------------------

    async def _on_action(self, action: Any) -> None:
        if isinstance(action, RunOnAssignment):
            assert self.group is not None
            assignor = self.group.member.config.client_assignor(action.protocol)
            result = getattr(assignor, "on_assignment")(action.assignment, action.generation)
            if inspect.isawaitable(result):
                await result
            return
        if isinstance(action, CommitOffsets):
            tps = {TopicPartition(*tp) for tp in action.partitions}
            await self._commit_positions(tps, swallow=True,
                                         member=(action.generation, action.member_id))
            return
        if isinstance(action, Failed):
            self._failed = action           # raised from the next poll only; the member rejoins
            self.fetcher.interrupt()
            return
        if isinstance(action, Fatal):
            self._fatal = action
            self.fetcher.set_assignment(())
            self.fetcher.interrupt()
            return
        tps = {TopicPartition(*tp) for tp in action.partitions}
        if isinstance(action, RunAssigned):
            self.fetcher.add(sorted(tps))
            callback = self._listener.on_partitions_assigned
        else:
            self.fetcher.remove(tps)  # before the callback: nothing of them is handed out
            callback = (self._listener.on_partitions_revoked if isinstance(action, RunRevoked)
                        else self._listener.on_partitions_lost)
            assert isinstance(action, (RunRevoked, RunLost))

        async def run() -> None:
            if isinstance(action, RunRevoked) and action.generation >= 0:
                self._revoking = (action.generation, action.member_id)
            try:
                result = callback(tps)
                if inspect.isawaitable(result):
                    await result
            finally:
                self._revoking = None

        # Not while the user still processes records getmany returned (of these partitions,
        # perhaps): the member's next step (acknowledging a revocation) waits with it.
        await self._gate.run(run)

    # -- metadata ---------------------------------------------------------------------------

    async def _refresh_metadata(self) -> None:
        period = self.settings["metadata.max.age.ms"] / 1000
        if self._pattern is not None:
            period = min(period, 5.0)
        while True:
            try:
                if self._pattern is not None:
                    md = await self.cluster.metadata(None)
                    topics = tuple(sorted(t for t, info in md.topics.items()
                                          if not info.is_internal
                                          and self._pattern.fullmatch(t)))
                    if topics != self._topics and self.group is not None:
                        self._topics = topics
                        self.group.post(Subscribe(topics, now_ms()))
                elif self._topics:
                    md = await self.cluster.metadata(self._topics)
                else:
                    md = None
                if md is not None and self.group is not None:
                    counts = tuple((t, len(i.partitions)) for t, i in sorted(md.topics.items())
                                   if i.error is ErrorCode.NONE)
                    self.group.post(MetadataUpdated(counts, now_ms()))
            except KafkaClientError:
                pass
            await asyncio.sleep(period)

    # -- consuming --------------------------------------------------------------------------

    def _check(self) -> None:
        if not self._started:
            raise KafkaClientError("the consumer is not started", "await consumer.start()")
        if self._closed:
            raise KafkaClientError("the consumer is closed")
        if self._fatal is not None:
            raise BrokerError(self._fatal.error, f"group {self.settings['group.id']!r}",
                              self._fatal.message)
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise BrokerError(failed.error, f"group {self.settings['group.id']!r}", failed.message)
        if self.fetcher.error is not None:
            raise self.fetcher.error

    async def getmany(self, *partitions: TopicPartition, timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Records by partition, waiting up to ``timeout_ms`` for the first ones."""
        self._check()
        # The user is done with the last batch: callbacks that waited for that run now,
        # before anything else is handed out.
        await self._gate.release()
        if self.group is not None:
            self.group.post(Poll(now_ms()))
        self._maybe_auto_commit()
        limit = max_records or int(self.settings["max.poll.records"])
        out = self.fetcher.drain(limit)
        if not out and timeout_ms > 0:
            await self.fetcher.wait(timeout_ms / 1000)
            self._check()
            out = self.fetcher.drain(limit)
        if partitions:
            out = {tp: rs for tp, rs in out.items() if tp in partitions}
        self._gate.holding = bool(out)
        return out

    async def poll(self, timeout_ms: int = 1000) -> ConsumerRecord | None:
        """One record, or None when none came within ``timeout_ms``."""
        got = await self.getmany(timeout_ms=timeout_ms, max_records=1)
        for records in got.values():
            return records[0]
        return None

    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ConsumerRecord]:
        while not self._closed:
            got = await self.getmany(timeout_ms=1000)
            for records in got.values():
                for record in records:
                    yield record

    # -- positions --------------------------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.fetcher.seek(TopicPartition(*tp), offset)

    async def seek_to_beginning(self, *tps: TopicPartition) -> None:
        await self._seek_to(tps, EARLIEST)

    async def seek_to_end(self, *tps: TopicPartition) -> None:
        await self._seek_to(tps, LATEST)

    async def _seek_to(self, tps: Iterable[TopicPartition], spec: int) -> None:
        wanted = list(tps) or list(self.fetcher.states)
        for tp, offset in (await self._list_offsets(wanted, spec)).items():
            self.fetcher.seek(tp, offset)

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record ``getmany`` returns for ``tp``."""
        tp = TopicPartition(*tp)
        st = self.fetcher.states.get(tp)
        if st is None:
            raise KafkaClientError(f"partition {tp.topic}-{tp.partition} is not assigned")
        if st.position is None:
            found = await self._resolve_positions([tp])
            if st.position is None:
                st.position = st.fetch_offset = found[tp]
        return st.position

    async def committed(self, tp: TopicPartition) -> int | None:
        """The group's committed offset of ``tp`` (None if nothing is committed)."""
        tp = TopicPartition(*tp)
        got = await self.admin.list_group_offsets(self.settings["group.id"],
                                                  {tp.topic: [tp.partition]})
        return got.get((tp.topic, tp.partition))

    def pause(self, *tps: TopicPartition) -> None:
        for tp in tps:
            st = self.fetcher.states.get(TopicPartition(*tp))
            if st is not None:
                st.paused = True

    def resume(self, *tps: TopicPartition) -> None:
        for tp in tps:
            st = self.fetcher.states.get(TopicPartition(*tp))
            if st is not None:
                st.paused = False
        self.fetcher.wake()

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, st in self.fetcher.states.items() if st.paused}

    def highwater(self, tp: TopicPartition) -> int:
        st = self.fetcher.states.get(TopicPartition(*tp))
        return -1 if st is None else st.high_watermark

    async def beginning_offsets(self, *tps: TopicPartition) -> dict[TopicPartition, int]:
        """The first offset still in the log of each partition (assigned or not)."""
        return await self._list_offsets([TopicPartition(*tp) for tp in tps], EARLIEST)

    async def end_offsets(self, *tps: TopicPartition) -> dict[TopicPartition, int]:
        """The offset the next record produced to each partition will get."""
        return await self._list_offsets([TopicPartition(*tp) for tp in tps], LATEST)

    async def _list_offsets(self, tps: list[TopicPartition], spec: int
                            ) -> dict[TopicPartition, int]:
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        out = {}
        for topic, parts in by_topic.items():
            for p, off in (await self.admin.list_offsets(topic, parts, spec)).items():
                out[TopicPartition(topic, p)] = off
        return out

    async def _resolve_positions(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Committed offsets, else auto.offset.reset, for partitions without a position."""
        out: dict[TopicPartition, int] = {}
        group = self.settings["group.id"]
        if group:
            wanted: dict[str, list[int]] = {}
            for tp in tps:
                wanted.setdefault(tp.topic, []).append(tp.partition)
            # read_committed: not an offset a transaction is still committing (KIP-447).
            stable = self.fetcher.isolation == 1
            for (t, p), off in (await self.admin.list_group_offsets(group, wanted, require_stable=stable)).items():
                out[TopicPartition(t, p)] = off
        rest = [tp for tp in tps if tp not in out]
        if rest:
            policy = self.settings["auto.offset.reset"]
            if policy == "none":
                raise KafkaClientError(f"no committed offset for {rest[0]} and "
                                       "auto.offset.reset=none")
            out.update(await self._list_offsets(rest, EARLIEST if policy == "earliest" else LATEST))
        return out

    # -- committing -------------------------------------------------------------------------

    def _maybe_auto_commit(self) -> None:
        if not self.settings["enable.auto.commit"] or not self.settings["group.id"]:
            return
        now = time.monotonic()
        if now < self._next_auto_commit:
            return
        self._next_auto_commit = now + self.settings["auto.commit.interval.ms"] / 1000
        if self.group is not None and not self.group.member.in_group and not self._manual:
            return
        self.commit_async()

    def group_metadata(self) -> GroupMetadata:
        """The member as the group knows it now (group id, generation or member epoch,
        member id, instance id), for ``Producer.send_offsets_to_transaction``: the group
        refuses a transactional commit from a member that is no longer current (KIP-447)."""
        group_id = self.settings["group.id"]
        if not group_id:
            raise KafkaClientError("group_metadata needs a group.id")
        if self.group is None or self._manual or not self.group.member.in_group:
            return GroupMetadata(group_id)
        m = self.group.member
        return GroupMetadata(group_id, m.generation, m.member_id, m.config.group_instance_id)

    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None
                     ) -> None:
        """Commit ``offsets`` (default: the current positions); CommitFailedError if the group
        moved on."""
        await self._commit(offsets)

    def commit_async(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None
                     ) -> asyncio.Task[None]:
        """Start a commit and return its task (errors are kept in the task)."""
        task = asyncio.create_task(self._commit(offsets))
        self._commits.add(task)
        task.add_done_callback(self._commits.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    async def _commit_positions(self, tps: set[TopicPartition] | None, *, swallow: bool,
                                member: tuple[int, str] | None = None) -> None:
        positions = self.fetcher.positions()
        if tps is not None:
            positions = {tp: o for tp, o in positions.items() if tp in tps}
        positions = {tp: o for tp, o in positions.items() if self._last_committed.get(tp) != o}
        if not positions:
            return
        try:
            await self._commit(positions, member)
        except KafkaClientError:
            if not swallow:
                raise

    async def _commit(self, offsets: Mapping[TopicPartition, Any] | None,
                      member: tuple[int, str] | None = None) -> None:
        group_id = self.settings["group.id"]
        if not group_id:
            raise KafkaClientError("commit needs a group.id")
        if offsets is None:
            offsets = self.fetcher.positions()
        if not offsets:
            return
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, value in sorted(offsets.items()):
            off, meta = (value.offset, value.metadata) if isinstance(value, OffsetAndMetadata) \
                else (int(value), "")
            by_topic.setdefault(tp[0], []).append(
                {"partition_index": tp[1], "committed_offset": off, "committed_leader_epoch": -1,
                 "committed_metadata": meta})
        generation, member_id, instance = -1, "", None
        if self.group is not None and not self._manual:
            m = self.group.member
            instance = m.config.group_instance_id
            member = member or self._revoking
            if member is not None:
                generation, member_id = member
            elif not m.in_group:
                raise CommitFailedError(f"group {group_id!r} is rebalancing; not committed")
            else:
                generation, member_id = m.generation, m.member_id

        def body(generation: int, member_id: str) -> Any:
            return request_fields(
                group_id=group_id, generation_id_or_member_epoch=generation,
                member_id=member_id, group_instance_id=instance, retention_time=-1,
                topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()])

        # A coordinator that moved, is loading, or whose connection died (a broker restart)
        # is found again and the commit resent until request.timeout.ms, with the cluster's
        # backoff (retry.backoff.ms doubling to 1 s); resending is safe, a commit of the same
        # offsets is idempotent.
        retries = self.cluster.retries(self.settings["request.timeout.ms"] / 1000)
        while True:
            resp = await self.cluster.call_coordinator(
                group_id, ApiKey.OFFSET_COMMIT, body(generation, member_id), error_of=first_partition_error,
                timeout=retries.remaining())
            errors = {ErrorCode(int(p.error_code)) for t in resp.topics for p in t.partitions
                      if int(p.error_code)}
            group_errors = errors & _GROUP_ERRORS
            if (group_errors == {ErrorCode.STALE_MEMBER_EPOCH} and member is None
                    and self.group is not None and not self._manual
                    and self.group.member.in_group):
                # The coordinator has moved this member to a newer epoch (one step of a
                # rebalance) that its heartbeat has not brought back yet: while still in the
                # group, resend with the epoch it learns, as Kafka's consumer does. (The
                # member heartbeats at once on this error, to learn it sooner.)
                delay = retries.next_delay()
                if delay is not None:
                    self.group.post(CommitAnswered(ErrorCode.STALE_MEMBER_EPOCH, now_ms()))
                    await self.cluster.sleep(delay)
                    generation = self.group.member.generation
                    member_id = self.group.member.member_id
                    continue
            if group_errors:
                code = min(group_errors, key=lambda c: c.name)
                if self.group is not None and not self._manual:
                    self.group.post(CommitAnswered(code, now_ms()))
                raise CommitFailedError(f"commit to group {group_id!r} failed: {code.name}")
            for t in resp.topics:
                for p in t.partitions:
                    if int(p.error_code):
                        raise BrokerError(int(p.error_code),
                                          f"commit {t.name}-{p.partition_index}")
            for tp, value in offsets.items():
                self._last_committed[TopicPartition(*tp)] = (
                    value.offset if isinstance(value, OffsetAndMetadata) else int(value))
            return


def _assignors(value: Any) -> tuple[Any, ...]:
    """``partition.assignment.strategy``: names separated by commas, or a list of names and
    assignor objects (a custom ``ClientAssignor``), preferred first."""
    entries = value.split(",") if isinstance(value, str) else (
        list(value) if isinstance(value, (list, tuple)) else [value])
    out: list[Any] = []
    for entry in entries:
        if isinstance(entry, str):
            if entry.strip():
                out.append(entry.strip())
        elif isinstance(entry, ClientAssignor):
            out.append(entry)
        else:
            raise ValueError(f"partition.assignment.strategy: {entry!r} is neither an assignor "
                             "name nor an assignor (name, supported_protocols, assign)")
    if not out:
        raise ValueError("partition.assignment.strategy names no assignor")
    return tuple(out)

