"""ShareFetch and ShareAcknowledge (share/apis.py: the versions served): records handed to
share-group members one at a time, and their acknowledgements (KIP-932).

How this works: this node keeps one `SharePartition` (core/share_partition.py) per (share
group, topic partition) it serves, loaded on first use from the state the group's
coordinator persisted (share_state.py; a partition with no state starts where the group's
`share.auto.offset.reset` says) and one share session per (group, member)
(core/share_sessions.py). A ShareFetch, in order:

1. checks its session epoch (0 opens a session, for a member of the share group only, and
   releases what the member's previous session held; -1 closes it; otherwise it must be the
   expected epoch);
2. applies the acknowledgements it carries, partition by partition, all or none per
   partition, and persists the partitions they changed: their records are appended to the
   group's metadata log in the order the changes were made, and the answer waits until they
   are durable, so an acknowledged record is never delivered again after `kill -9`;
3. forgets the partitions it names: they leave the session, and what the member holds
   there stays acquired until it acknowledges it or its lock runs out (Kafka 4.4 releases
   only the partitions still in a session when the session closes; differential scenario
   `share_forget_partition`);
4. unless the session closes, acquires records for the member from the session's
   partitions (starting one further each time so none starves), reading whole batches from
   the partition log and handing back the batches with the acquired offset ranges; with
   nothing to hand out it long-polls until data arrives, a record is released, a lock runs
   out, or MaxWaitMs passes. v2's ShareAcquireMode (KIP-1206) picks how MaxRecords binds:
   batch-optimized finishes the batch it reaches the limit in, record-limit stops at it.

A v2 request with IsRenewAck (KIP-1222) may carry RENEW acknowledgements, which give the
member a fresh lock on records it holds (the group's `share.renew.acknowledge.enable`, else
INVALID_RECORD_STATE); such a ShareFetch must ask for nothing (MaxBytes, MinBytes,
MaxRecords, MaxWaitMs all 0, else INVALID_REQUEST) and acquires nothing. A renewed lock is
only the in-memory timer, as in Kafka: a renewal writes nothing, and after a crash the
record is available again like any acquired one.

In a cluster a share partition is served by the leader of its topic partition: elsewhere
its partitions get NOT_LEADER_OR_FOLLOWER with the current leader (KIP-951's
current_leader and node_endpoints), and a partition this node stops leading (taken over,
handed over) is forgotten here, to be loaded from its persisted state by the new leader.
Its state is written through share_state.py: into the group's metadata partition where this
node serves it, else to the share coordinator that owns it with WriteShareGroupState
(remote_share_state.py), so what a new leader reads is what the old one wrote.

ShareAcknowledge is steps 1-2 (and -1 closes the session). When a connection closes, its
sessions go and every record their members held is released at once; a member that only
stops fetching (paused, frozen) keeps its records until their locks run out, and one that
leaves its share group keeps them in its session until the session closes
(core/share_sessions.py: the leave and the final acknowledgement may come in either order).
A ShareFetch with MaxBytes 0 acquires nothing and answers at once, as Kafka does (its
acknowledgements are still applied). A group with `share.isolation.level` read_committed is
handed records up to the last stable offset only, and the records of aborted transactions
are archived, never delivered (`_aborted_batches`). Acquisitions are not persisted: after a
crash a record that was acquired but not acknowledged is available again, with that delivery
not counted (core/share_partition.py). The end of a delivery is: an acknowledgement is
written before it is answered, a release at once, and a lock that runs out when it runs out
(a timer per share partition at its earliest lock, `_arm_lock_timer`, or the fetch that
sees it first, before it hands the record out again), as Kafka does, so a crash after a lock
ran out does not forget that delivery (the delivery limit counts it).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any, Iterable

from kgroup.batch_layout import (
    ATTRIBUTES_AND_LAST_DELTA,
    ATTRIBUTES_AT,
    BASE_AND_LENGTH,
    CONTROL_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    PRODUCER_ID,
    PRODUCER_ID_AT,
    TRANSACTIONAL_BIT,
)
from kgroup.broker.data.context import NOT_LEADER, ArrivalWatch, ClusterView
from kgroup.broker.data.producer_states import ProducerStates
from kgroup.broker.share.dead_letters import DeadLetterWriter
from kgroup.broker.share.share_reset import reset_start_offset
from kgroup.broker.share.share_state import ShareStateStore
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import ShareStateValue
from kgroup.core.share_partition import AckBatch, AcquiredRange, LogBatch, RecordState, SharePartition
from kgroup.core.share_sessions import FINAL_EPOCH, OPEN_EPOCH, SharePartitionId, ShareSession, ShareSessions
from kgroup.storage import DataDir, StorageError
from kgroup.storage.errors import TopicError
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, hint, item, ms

log = logging.getLogger("kgroup.broker.share")

DEFAULT_MAX_RECORDS = 500
# Reads of one partition in one pass while they find only records that are never delivered.
_SKIP_READS = 8

ShareKey = tuple[str, str, int]             # (group id, topic id, partition)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _PartitionFailed(Exception):
    """A partition of the request cannot be served: its error code."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


def _batches(raw: bytes, aborted: list | None = None) -> list[tuple[int, int, LogBatch]]:
    """(position, size, batch) of each whole record batch in `raw`; with `aborted` (the
    aborted transactions overlapping it, read_committed), the data batches of those
    transactions are marked aborted."""
    out = []
    pos, n = 0, len(raw)
    while pos + HEADER_SIZE <= n:
        base, length = BASE_AND_LENGTH.unpack_from(raw, pos)
        size = length + LOG_OVERHEAD
        if pos + size > n:
            break
        attrs, last_delta = ATTRIBUTES_AND_LAST_DELTA.unpack_from(raw, pos + ATTRIBUTES_AT)
        control = bool(attrs & CONTROL_BIT)
        dropped = False
        if aborted and not control and attrs & TRANSACTIONAL_BIT:
            (producer,) = PRODUCER_ID.unpack_from(raw, pos + PRODUCER_ID_AT)
            dropped = any(t.producer_id == producer and t.first_offset <= base < t.last_offset for t in aborted)
        out.append((pos, size, LogBatch(base, base + last_delta, control, dropped)))
        pos += size
    return out


class ShareFetchService:
    """The share partitions and share sessions of this node, and the two APIs over them."""

    def __init__(self, data: DataDir, watch: ArrivalWatch, store: ShareStateStore,
                 cluster: ClusterView | None = None, producers: ProducerStates | None = None,
                 dead_letters: DeadLetterWriter | None = None) -> None:
        self.data = data
        # KIP-1191: where the offsets archived as rejected or over the delivery limit go.
        self.dead_letters = dead_letters if dead_letters is not None else DeadLetterWriter(data, ring=watch.ring)
        self.watch = watch
        self.store = store
        self.cluster = cluster
        # The partitions' producer state (the last stable offset and aborted transactions,
        # for read_committed share groups): the data path's, shared.
        self.producers = producers if producers is not None else ProducerStates(watch.ring)
        self.partitions: dict[ShareKey, SharePartition] = {}
        # The leader epoch of its topic partition each share partition was loaded at: its
        # state writes carry it, so once another node has led the partition and written, a
        # write from here is fenced (FENCED_LEADER_EPOCH) instead of overwriting that state.
        self.leader_epochs: dict[ShareKey, int] = {}
        self.sessions = ShareSessions()
        self._loading: dict[ShareKey, asyncio.Future] = {}
        self._background: set[asyncio.Task] = set()
        self._lock_timers: dict[ShareKey, tuple[int, asyncio.TimerHandle]] = {}
        self._unsettled: dict[ShareKey, asyncio.Task] = {}     # the last write not yet durable

    # ---- topics and partitions ---------------------------------------------------------------

    def _leader_epoch(self, name: str, partition: int) -> int:
        """The partition's leader epoch now (a cluster's; -1 on a broker of its own)."""
        meta = self.data.topics().get(name)
        if self.cluster is None or meta is None or partition >= len(meta.slots):
            return -1
        return self.data.leader_epoch(meta.slots[partition])

    def _topics_by_id(self) -> dict[str, tuple[str, int]]:
        return {str(meta.topic_id): (name, meta.partitions) for name, meta in self.data.topics().items()}

    @staticmethod
    def _where(topics: dict[str, tuple[str, int]], topic_id: str, partition: int) -> str:
        found = topics.get(topic_id)
        if found is None:
            raise _PartitionFailed(ErrorCode.UNKNOWN_TOPIC_ID)
        name, count = found
        if not 0 <= partition < count:
            raise _PartitionFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return name

    def _led_here(self, name: str, partition: int) -> Any:
        """The partition's log, if this node leads it (_PartitionFailed if not)."""
        try:
            plog = self.data.partition_log(name, partition)
        except TopicError:
            raise _PartitionFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
        except NOT_LEADER:
            raise _PartitionFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER) from None
        if not plog.owned:
            raise _PartitionFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return plog

    async def _partition(self, group_id: str, topic_id: str, partition: int,
                         topics: dict[str, tuple[str, int]]) -> SharePartition:
        """The share partition, loaded (or initialised and persisted) on first use."""
        name = self._where(topics, topic_id, partition)
        self._led_here(name, partition)
        key = (group_id, topic_id, partition)
        while True:
            sp = self.partitions.get(key)
            if sp is not None:
                try:
                    # Nothing is handed out or acknowledged while the state cannot be written.
                    sp.limits = self.store.limits(group_id)
                except GroupError as exc:
                    raise _PartitionFailed(exc.code) from None
                return sp
            loading = self._loading.get(key)
            if loading is None:
                break
            await asyncio.shield(loading)
            if key not in self.partitions:
                raise _PartitionFailed(ErrorCode.UNKNOWN_SERVER_ERROR)
        loading = self._loading[key] = asyncio.get_running_loop().create_future()
        try:
            leader_epoch = self._leader_epoch(name, partition)
            value = await self.store.read(group_id, topic_id, partition, leader_epoch)
            if value is None:
                plog = self.data.partition_log(name, partition)
                start = reset_start_offset(self.store.auto_offset_reset(group_id), plog, _now_ms())
                if start is None:
                    raise _PartitionFailed(ErrorCode.OFFSET_NOT_AVAILABLE)
                value = ShareStateValue(0, start)
                await self.store.initialize(group_id, topic_id, partition, value)
            sp = self.partitions[key] = SharePartition.from_persisted(value, self.store.limits(group_id))
            self.leader_epochs[key] = leader_epoch
            return sp
        except GroupError as exc:
            raise _PartitionFailed(exc.code) from None
        except TopicError:
            raise _PartitionFailed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) from None
        finally:
            del self._loading[key]
            loading.set_result(None)

    # ---- acknowledgements --------------------------------------------------------------------

    async def _acknowledge(self, group_id: str, member_id: str, acks: dict[SharePartitionId, list[AckBatch]],
                           topics: dict[str, tuple[str, int]],
                           renew: bool = False) -> dict[SharePartitionId, ErrorCode]:
        """Apply acknowledgements, persist what they changed, and wait until it is durable
        (`renew`: the request's IsRenewAck, RENEW allowed; a partition whose acknowledgements
        only renewed locks has nothing to write)."""
        errors: dict[SharePartitionId, ErrorCode] = {}
        loaded: dict[SharePartitionId, SharePartition] = {}
        for (topic_id, partition) in acks:
            try:
                loaded[(topic_id, partition)] = await self._partition(group_id, topic_id, partition, topics)
            except _PartitionFailed as exc:
                errors[(topic_id, partition)] = exc.code
        # From here to the appends nothing awaits: the states written are the states made.
        now = _now_ms()
        changed = []
        for pid, sp in loaded.items():
            code = sp.acknowledge(member_id, acks[pid], now, renew)
            errors[pid] = code
            if code is ErrorCode.NONE and not sp.renewed_only:
                changed.append(pid)
        waits = {}
        for pid in changed:
            for wait in self._persist(group_id, [pid], errors):
                waits[pid] = wait
        self._ring(group_id, changed, topics)
        if waits:
            results = await asyncio.gather(*waits.values(), return_exceptions=True)
            for pid, result in zip(waits, results):
                if isinstance(result, GroupError):
                    # Not written at the share coordinator on another node (fenced, or not
                    # reachable for long): the acknowledgement failed; reload the state. A
                    # newer leader of the partition wrote (FENCED_LEADER_EPOCH): this node no
                    # longer leads it, which a client hears as NOT_LEADER_OR_FOLLOWER.
                    log.info("share partition %s: state not written (%s); reloading it", pid, result.code.name)
                    self.partitions.pop((group_id, *pid), None)
                    errors[pid] = (ErrorCode.NOT_LEADER_OR_FOLLOWER if result.code is ErrorCode.FENCED_LEADER_EPOCH
                                   else result.code)
                elif isinstance(result, BaseException):
                    raise result
        return errors

    def _persist(self, group_id: str, pids: Iterable[SharePartitionId],
                 errors: dict[SharePartitionId, ErrorCode] | None = None) -> list[Any]:
        """Append the durable view of each partition now; the awaitables of their durability."""
        waits = []
        for topic_id, partition in pids:
            key = (group_id, topic_id, partition)
            sp = self.partitions.get(key)
            if sp is None:
                continue
            try:
                waits.append(self.store.write(group_id, topic_id, partition, sp.persisted(),
                                              self.leader_epochs.get(key, -1)))
                sp.lapsed = False
                if sp.dead_letters:
                    self._write_dead_letters(group_id, topic_id, partition, sp.take_dead_letters())
            except GroupError as exc:
                # FENCED_STATE_EPOCH: the state was reset meanwhile; reload it next time.
                log.info("share partition %s: state not written (%s); reloading it", key, exc.code.name)
                self.partitions.pop(key, None)
                if errors is not None:
                    errors[(topic_id, partition)] = exc.code
        return waits

    def _write_dead_letters(self, group_id: str, topic_id: str, partition: int, letters: list) -> None:
        """Copy offsets just archived as rejected or over the delivery limit to the group's
        dead-letter topic (KIP-1191); they stay archived whatever becomes of the copy."""
        found = self._topics_by_id().get(topic_id)
        try:
            dlq_topic, copy = self.store.dead_letter_queue(group_id)
        except GroupError:
            return
        if found is not None and dlq_topic:
            self.dead_letters.write(group_id, dlq_topic, copy, found[0], partition, letters)

    def _ring(self, group_id: str, pids: Iterable[SharePartitionId], topics: dict[str, tuple[str, int]]) -> None:
        """Records may have become available: wake fetches waiting on these partitions."""
        for topic_id, partition in pids:
            found = topics.get(topic_id)
            if found is not None:
                self.watch.ring((found[0], partition))

    # ---- releasing -----------------------------------------------------------------------------

    def _release(self, group_id: str, member_id: str, pids: Iterable[SharePartitionId] | None = None) -> None:
        """Put back what `member_id` holds (in `pids`, or anywhere in the group)."""
        if pids is None:
            keys = [k for k in self.partitions if k[0] == group_id]
        else:
            keys = [(group_id, t, p) for t, p in pids]
        changed = [(t, p) for g, t, p in keys if (sp := self.partitions.get((g, t, p))) is not None
                   and sp.release_member(member_id)]
        if not changed:
            return
        self._ring(group_id, changed, self._topics_by_id())
        self._persist_soon(group_id, changed)

    def _persist_soon(self, group_id: str, pids: Iterable[SharePartitionId]) -> None:
        """Write these partitions' state now, with no request waiting on it (a release, a
        lock that ran out); `_unsettled` until it is durable."""
        keys = [(group_id, t, p) for t, p in pids]
        waits = self._persist(group_id, [(t, p) for _, t, p in keys])
        if waits:
            task = asyncio.get_running_loop().create_task(self._settle(waits))
            self._background.add(task)
            for key in keys:
                self._unsettled[key] = task

            def settled(done: asyncio.Task) -> None:
                self._background.discard(done)
                for key in keys:
                    if self._unsettled.get(key) is done:
                        del self._unsettled[key]

            task.add_done_callback(settled)

    @staticmethod
    async def _settle(waits: list[Any]) -> None:
        results = await asyncio.gather(*waits, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.warning("share state after a release or a lock timeout was not written: %s", result)

    # ---- record locks ----------------------------------------------------------------------------

    def _arm_lock_timer(self, key: ShareKey, deadline: int | None) -> None:
        """Make sure a timer fires when the share partition's earliest lock (`deadline`,
        its `next_deadline()`) runs out."""
        if deadline is None:
            return
        armed = self._lock_timers.get(key)
        if armed is not None:
            if armed[0] <= deadline:
                return
            armed[1].cancel()
        delay = max(0.0, (deadline - _now_ms()) / 1000) + 0.001
        self._lock_timers[key] = (deadline, asyncio.get_running_loop().call_later(delay, self._locks_ran_out, key))

    def _locks_ran_out(self, key: ShareKey) -> None:
        """A lock timer fired: put back what ran out and write that delivery's end now (also
        when a fetch noticed it first: `lapsed`); then wait for the next lock."""
        self._lock_timers.pop(key, None)
        sp = self.partitions.get(key)
        if sp is None:
            return                           # forgotten (moved, reset, deleted): loaded again later
        group_id, topic_id, partition = key
        sp.expire(_now_ms())
        if sp.lapsed:
            self._ring(group_id, [(topic_id, partition)], self._topics_by_id())
            self._persist_soon(group_id, [(topic_id, partition)])
        self._arm_lock_timer(key, sp.next_deadline())

    def connection_closed(self, connection: int) -> None:
        """A client connection closed: its sessions end and their records are released now."""
        for session in self.sessions.drop_connection(connection):
            self._release(session.group_id, session.member_id, list(session.partitions))

    def member_left(self, group_id: str, member_id: str) -> None:
        """The member left its share group: without a share session here, release what it
        holds now; with one, the session keeps its records until it closes (its final
        ShareFetch/ShareAcknowledge, sent at the same time as the leave, or its connection)
        or their locks run out (core/share_sessions.py)."""
        if self.sessions.member_left(group_id, member_id):
            self._release(group_id, member_id)

    def partition_moved(self, topic: str, partition: int) -> None:
        """This node stopped leading a topic partition: its share partitions go (the new
        leader loads them from their persisted state; what was acquired here is available
        again there, what was acknowledged stays done)."""
        meta = self.data.topics().get(topic)
        if meta is None:
            return
        topic_id = str(meta.topic_id)
        for key in [k for k in self.partitions if k[1] == topic_id and k[2] == partition]:
            del self.partitions[key]

    def group_deleted(self, group_id: str) -> None:
        self.sessions.drop_group(group_id)
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]

    def state_reset(self, group_id: str) -> None:
        """The group's share-partition state was altered or deleted: load it again."""
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]

    # ---- sessions ----------------------------------------------------------------------------

    def _session(self, group_id: str, member_id: str, epoch: int, connection: int) -> ShareSession:
        if epoch == OPEN_EPOCH:
            # Only a member of the share group opens a session (its records are handed out
            # from it); a member that left or was fenced joins again first.
            code = self.store.membership(group_id, member_id)
            if code is not ErrorCode.NONE:
                raise GroupError(code, f"{member_id} is not a member of share group {group_id}"
                                 if code is ErrorCode.UNKNOWN_MEMBER_ID else f"no share group {group_id}")
            session, old = self.sessions.open(group_id, member_id, connection)
            if old is not None:
                self._release(group_id, member_id, list(old.partitions))
            return session
        try:
            return self.sessions.find(group_id, member_id, epoch, connection)
        except GroupError as exc:
            if exc.code is ErrorCode.INVALID_SHARE_SESSION_EPOCH:
                old = self.sessions.drop_member(group_id, member_id)
                if old is not None:
                    self._release(group_id, member_id, list(old.partitions))
            raise

    def _continue(self, group_id: str, member_id: str, epoch: int, acks: dict | None,
                  connection: int) -> ShareSession:
        """Step 1 of both APIs: the request's session, its epoch moved on (GroupError if not)."""
        if not group_id or not member_id or acks is None:
            raise GroupError(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required; acknowledgement "
                                                        "batches must be ordered, with valid types")
        session = self._session(group_id, member_id, epoch, connection)
        if epoch != FINAL_EPOCH:
            session.advance()
        return session

    def _close(self, session: ShareSession) -> None:
        self.sessions.drop(session)
        self._release(session.group_id, session.member_id, list(session.partitions))

    # ---- ShareFetch ----------------------------------------------------------------------------

    async def share_fetch(self, header: RequestHeader, req: Any, connection: int) -> Any:
        cls = response_class(header.api_key, header.api_version)
        group_id, member_id, epoch = req.group_id or "", req.member_id or "", int(req.share_session_epoch)
        acks = _acks(req.topics, "partition_index")
        requested = [(str(t.topic_id), int(p.partition_index)) for t in req.topics for p in t.partitions]
        forgotten = [(str(t.topic_id), int(p)) for t in req.forgotten_topics_data for p in t.partitions]
        limits = self._limits(group_id)

        def failed(code: ErrorCode, message: str | None = None) -> Any:
            # Kafka's answer to a request it refuses as invalid carries no message.
            message = None if code is ErrorCode.INVALID_REQUEST else message
            return build(cls, throttle_time=0, error_code=code, error_message=message,
                         acquisition_lock_timeout=0, responses=(), node_endpoints=())

        # KIP-1222: a ShareFetch v2 that renews locks only acknowledges; it must ask for no
        # records (Kafka refuses the request otherwise).
        renew = bool(getattr(req, "is_renew_ack", False))
        if renew and (int(req.max_bytes) or int(req.min_bytes) or int(req.max_records) or ms(req.max_wait)):
            return failed(ErrorCode.INVALID_REQUEST)
        # 1. The session.
        if epoch == OPEN_EPOCH and acks:
            return failed(ErrorCode.INVALID_REQUEST, "a request opening a share session cannot acknowledge")
        if epoch == FINAL_EPOCH and forgotten:
            return failed(ErrorCode.INVALID_REQUEST, "a request closing a share session cannot forget partitions")
        try:
            session = self._continue(group_id, member_id, epoch, acks, connection)
        except GroupError as exc:
            return failed(exc.code, exc.message)
        for pid in requested:
            session.partitions.setdefault(pid, None)
        topics = self._topics_by_id()
        # 2. Acknowledgements.
        ack_errors = await self._acknowledge(group_id, member_id, acks, topics, renew) if acks else {}
        # 3. Forgotten partitions leave the session; their acquired records stay the member's.
        for pid in forgotten:
            session.partitions.pop(pid, None)
        if epoch == FINAL_EPOCH:
            self._close(session)
            return self._fetch_response(cls, {}, {}, ack_errors, list(ack_errors), limits)
        # 4. Acquire, long-polling while there is nothing; MaxBytes 0 (as Kafka answers it)
        #    and a member that left its group get nothing, at once.
        if int(getattr(req, "share_acquire_mode", 0)) not in (0, 1):
            # Kafka fails the fetch on an acquire mode it does not know (KIP-1206 has two),
            # after the session and the acknowledgements, with no message.
            return failed(ErrorCode.UNKNOWN_SERVER_ERROR)
        if int(req.max_bytes) == 0 or session.member_left or renew:
            return self._fetch_response(cls, {}, {}, ack_errors, list(ack_errors), limits)
        got, errors = await self._acquire_waiting(session, req, topics)
        shown = list(session.partitions) + [pid for pid in ack_errors if pid not in session.partitions]
        return self._fetch_response(cls, got, errors, ack_errors, shown, self._limits(group_id),
                                    incremental=epoch != OPEN_EPOCH)

    def _limits(self, group_id: str) -> Any:
        """The group's share limits, or None where they cannot be read (no group id, or
        the group is coordinated by another node)."""
        if not group_id:
            return None
        try:
            return self.store.limits(group_id)
        except GroupError:
            return None

    async def _acquire_waiting(self, session: ShareSession, req: Any, topics: dict[str, tuple[str, int]]):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(ms(req.max_wait), 0) / 1000
        max_records = int(req.max_records) if int(req.max_records) > 0 else DEFAULT_MAX_RECORDS
        max_bytes = int(req.max_bytes) if int(req.max_bytes) > 0 else 2**31 - 1
        # KIP-1206: 1 is record-limit (at most MaxRecords), 0 batch-optimized.
        record_limit = int(getattr(req, "share_acquire_mode", 0)) == 1
        shape = (record_limit, int(req.batch_size))
        while True:
            got, errors, next_lock = await self._acquire(session, topics, max_records, max_bytes, shape)
            now = loop.time()
            if got or now >= deadline or self.watch.closed or not session.partitions:
                return got, errors
            wait = deadline - now
            if next_lock is not None:
                wait = min(wait, max(0.0, (next_lock - _now_ms()) / 1000) + 0.001)
            keys = [(topics[t][0], p) for t, p in session.partitions if t in topics]
            await self.watch.wait(keys, wait)
            if self.sessions.sessions.get((session.group_id, session.member_id)) is not session:
                return {}, {}                # the session ended meanwhile (connection closed)

    async def _acquire(self, session: ShareSession, topics: dict[str, tuple[str, int]], max_records: int,
                       max_bytes: int, shape: tuple[bool, int] = (False, 0)):
        """One pass over the session's partitions: (acquired per partition, errors, earliest lock)."""
        got: dict[SharePartitionId, tuple[list[AcquiredRange], bytes]] = {}
        errors: dict[SharePartitionId, ErrorCode] = {}
        order = list(session.partitions)
        if order:
            start = session.rotation % len(order)
            order = order[start:] + order[:start]
            session.rotation += 1
        next_lock = None
        lapsed: list[SharePartitionId] = []
        for pid in order:
            if max_records <= 0 or max_bytes <= 0:
                break
            topic_id, partition = pid
            try:
                sp = await self._partition(session.group_id, topic_id, partition, topics)
                if pid not in session.partitions:
                    continue                 # forgotten while loading
                ranges, data = self._acquire_one(sp, topics[topic_id][0], partition, session.member_id,
                                                 max_records, max_bytes, shape)
            except _PartitionFailed as exc:
                errors[pid] = exc.code
                continue
            except StorageError as exc:
                log.error("share fetch from %s-%d failed in storage: %s", topic_id, partition, exc)
                errors[pid] = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            lock = sp.next_deadline()
            if ranges:
                self._arm_lock_timer((session.group_id, topic_id, partition), lock)
                got[pid] = (ranges, data)
                max_records -= sum(r.last_offset - r.first_offset + 1 for r in ranges)
                max_bytes -= len(data)
            if lock is not None and (next_lock is None or lock < next_lock):
                next_lock = lock
            if sp.lapsed:
                lapsed.append(pid)
        # A record whose last delivery ended (released, its lock ran out) is handed out again
        # only once that end is durable, so a crash now does not forget it: written here if
        # this fetch saw a lock run out before its timer did, else waited for if under way.
        if lapsed:
            await self._settle(self._persist(session.group_id, lapsed))
        unsettled = {self._unsettled.get((session.group_id, *pid)) for pid in got} - {None}
        if unsettled:
            await asyncio.gather(*(asyncio.shield(task) for task in unsettled))
        return got, errors, next_lock

    def _acquire_one(self, sp: SharePartition, name: str, partition: int, member_id: str, max_records: int,
                     max_bytes: int, shape: tuple[bool, int] = (False, 0)) -> tuple[list[AcquiredRange], bytes]:
        """Acquire from one partition; `shape` is (record-limit mode, BatchSize)."""
        plog = self._led_here(name, partition)
        now = _now_ms()
        upto, state = plog.log_end_offset, None
        if sp.limits.read_committed:
            state = self.producers.of((name, partition), plog)
            upto = state.last_stable_offset(upto)
        # A read that held only what is never delivered (markers, aborted transactions:
        # archived by `acquire`) moves the window on; read on from there.
        for _ in range(_SKIP_READS):
            first = sp.first_to_read(plog.log_start_offset, upto, now)
            if first is None or first >= upto:
                return [], b""
            raw = plog.read(first, max_bytes, upto if state is not None else None)
            batches = _batches(raw, None if state is None else state.aborted_between(first, upto))
            window = (sp.start, sp.end)
            ranges = sp.acquire(member_id, [b for _, _, b in batches], max_records, now, *shape)
            if ranges or (sp.start, sp.end) == window:
                break
        if not ranges:
            return [], b""
        parts = []
        k = 0
        for pos, size, batch in batches:
            while k < len(ranges) and ranges[k].last_offset < batch.base_offset:
                k += 1
            if k < len(ranges) and ranges[k].first_offset <= batch.last_offset:
                parts.append(raw[pos:pos + size])
        return ranges, b"".join(parts)

    def _fetch_response(self, cls: Any, got: dict, errors: dict, ack_errors: dict,
                        shown: list[SharePartitionId], limits: Any, incremental: bool = False) -> Any:
        topic_cls = item(cls, "responses")
        part_cls = item(topic_cls, "partitions")
        acq_cls = item(part_cls, "acquired_records")
        leader_cls = _leader_class(part_cls)
        leaders = _Leaders(self, leader_cls)
        by_topic: dict[str, list] = {}
        for pid in dict.fromkeys(shown):
            topic_id, partition = pid
            ranges, data = got.get(pid, ((), b""))
            error = errors.get(pid, ErrorCode.NONE)
            ack = ack_errors.get(pid, ErrorCode.NONE)
            if incremental and not ranges and not data and error is ErrorCode.NONE and pid not in ack_errors:
                continue        # an incremental answer leaves out a partition with nothing to say

            moved = ErrorCode.NOT_LEADER_OR_FOLLOWER in (error, ack)
            by_topic.setdefault(topic_id, []).append(build(
                part_cls, partition_index=partition, error_code=error,
                error_message=None if error is ErrorCode.NONE else error.name,
                acknowledge_error_code=int(ack), acknowledge_error_message=_ack_message(ack),
                current_leader=leaders.of(pid, moved), records=data,
                acquired_records=tuple(build(acq_cls, first_offset=r.first_offset, last_offset=r.last_offset,
                                             delivery_count=r.delivery_count) for r in ranges)))
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                     acquisition_lock_timeout=limits.record_lock_ms if limits is not None else 0,
                     responses=tuple(build(topic_cls, topic_id=uuid.UUID(t), partitions=tuple(ps))
                                     for t, ps in by_topic.items()),
                     node_endpoints=leaders.endpoints(item(cls, "node_endpoints")))

    # ---- ShareAcknowledge ----------------------------------------------------------------------

    async def share_acknowledge(self, header: RequestHeader, req: Any, connection: int) -> Any:
        cls = response_class(header.api_key, header.api_version)
        group_id, member_id, epoch = req.group_id or "", req.member_id or "", int(req.share_session_epoch)
        acks = _acks(req.topics, "partition_index")

        def failed(code: ErrorCode, message: str | None = None) -> Any:
            message = None if code is ErrorCode.INVALID_REQUEST else message   # as ShareFetch's
            return build(cls, throttle_time=0, error_code=code, error_message=message, acquisition_lock_timeout=0,
                         responses=(), node_endpoints=())

        if not group_id or not member_id:
            return failed(ErrorCode.INVALID_REQUEST)         # as Kafka, before the session epoch
        if epoch == OPEN_EPOCH:
            return failed(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "only ShareFetch opens a share session")
        try:
            session = self._continue(group_id, member_id, epoch, acks, connection)
        except GroupError as exc:
            return failed(exc.code, exc.message)
        ack_errors = await self._acknowledge(group_id, member_id, acks, self._topics_by_id(),
                                             bool(getattr(req, "is_renew_ack", False)))
        if epoch == FINAL_EPOCH:
            self._close(session)
        topic_cls = item(cls, "responses")
        part_cls = item(topic_cls, "partitions")
        leader_cls = _leader_class(part_cls)
        leaders = _Leaders(self, leader_cls)
        by_topic: dict[str, list] = {}
        for (topic_id, partition), code in ack_errors.items():
            by_topic.setdefault(topic_id, []).append(build(
                part_cls, partition_index=partition, error_code=code, error_message=_ack_message(code),
                current_leader=leaders.of((topic_id, partition), code is ErrorCode.NOT_LEADER_OR_FOLLOWER)))
        limits = self._limits(group_id)
        # v2 (KIP-1222): the group's lock duration, which a renewal granted.
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                     acquisition_lock_timeout=limits.record_lock_ms if limits is not None else 0,
                     responses=tuple(build(topic_cls, topic_id=uuid.UUID(t), partitions=tuple(ps))
                                     for t, ps in by_topic.items()),
                     node_endpoints=leaders.endpoints(item(cls, "node_endpoints")))


def _ack_message(code: ErrorCode) -> str | None:
    """A partition's acknowledgement error message: none for INVALID_REQUEST (acknowledgement
    batches Kafka's request validation refuses, which it answers without one)."""
    return None if code in (ErrorCode.NONE, ErrorCode.INVALID_REQUEST) else code.name


def _acks(topics: Any, partition_field: str) -> dict[SharePartitionId, list[AckBatch]] | None:
    """The acknowledgement batches of a request by partition; None if one is malformed."""
    out: dict[SharePartitionId, list[AckBatch]] = {}
    for t in topics:
        for p in t.partitions:
            batches = [AckBatch(int(b.first_offset), int(b.last_offset), tuple(int(x) for x in b.acknowledge_types))
                       for b in p.acknowledgement_batches]
            if not batches:
                continue
            for b in batches:
                if b.last_offset < b.first_offset or not b.types:
                    return None
            out.setdefault((str(t.topic_id), int(getattr(p, partition_field))), []).extend(batches)
    return out


class _Leaders:
    """KIP-951 for a share answer: a partition answered NOT_LEADER_OR_FOLLOWER names its
    current leader (leader -1 while it moves), and the answer lists those leaders' addresses."""

    def __init__(self, service: ShareFetchService, leader_cls: type) -> None:
        self.service = service
        self.leader_cls = leader_cls
        self.named: set[int] = set()

    def of(self, pid: SharePartitionId, moved: bool) -> Any:
        leader, epoch = -1, -1
        cluster = self.service.cluster
        if moved and cluster is not None:
            found = self.service._topics_by_id().get(pid[0])
            meta = self.service.data.topics().get(found[0]) if found is not None else None
            if meta is not None and pid[1] < len(meta.slots):
                node = cluster.leader(meta.slots[pid[1]])
                if node is not None:
                    leader = node
                    epoch = self.service.data.leader_epoch(meta.slots[pid[1]])
                    self.named.add(node)
        if not moved:
            # Not a leadership answer: Kafka leaves the struct at its defaults, 0 and 0.
            return build(self.leader_cls, leader_id=0, leader_epoch=0)
        # The partition's leader epoch as Metadata names it (storage/leader_epochs.py); -1
        # where no leader is named.
        return build(self.leader_cls, leader_id=leader, leader_epoch=epoch if leader >= 0 else -1)

    def endpoints(self, endpoint_cls: type) -> tuple:
        if not self.named:
            return ()
        brokers = self.service.cluster.brokers()
        return tuple(build(endpoint_cls, node_id=n, host=brokers[n][0], port=brokers[n][1], rack=None)
                     for n in sorted(self.named) if n in brokers)


def _leader_class(part_cls: type) -> type:
    return hint(part_cls, "current_leader")
