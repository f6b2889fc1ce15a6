"""Fetch (data/apis.py: the versions served): fetch sessions, whole batches, long-poll for MinBytes.

Version notes: v4 isolation level and last_stable_offset; v5 log_start_offset; v7 fetch
sessions (KIP-227); v11 preferred_read_replica (always -1) and rack_id; v12 flexible,
last_fetched_epoch / diverging_epoch (leader epoch never changes, so never diverges); v13
topics by id only (an unknown id → UNKNOWN_TOPIC_ID); v15 replica_state; v17/v18
follower-only fields.

Fetch sessions (KIP-227, fetch_sessions.py holds the rules and the cache): a full fetch
(epoch 0) opens a session of the partitions it lists and answers its id; an incremental
one (the session's id and epoch) changes the session (partitions listed are added or
updated, `forgotten_topics_data` dropped), reads every partition of the session and answers
only those with something new (records, an error, a changed high watermark or log start
offset); epoch -1 closes a session and is answered sessionless. A session error
(FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR) is
answered with session id 0 and nothing read. Followers (replica_id >= 0) get sessions as
Kafka gives them (privileged in the cache); kgroup's own cluster never fetches from a peer
(its nodes share the data dir) and its client fetches sessionless (epoch -1). An isolation
level other than 0 or 1 fails a fetch that reads any partition with UNKNOWN_SERVER_ERROR
(every requested partition with it before v13), after the session has changed — as on Kafka.

Sizes (KIP-74): partitions are read in request order (an incremental fetch: its session's
order, where a partition that returned records moves to the end); each gets at most its
partition_max_bytes and what is left of the request's max_bytes, except that the first
partition that has data returns at least one whole batch even if it is larger than both.

Transactions (KIP-98): every partition answers its last stable offset (the first offset of
its earliest open transaction, else the high watermark). A read_committed fetch
(isolation_level 1) gets only batches below it, with the aborted transactions that overlap
what it got, so the client drops their records; a marker that ends a transaction rings the
partition, waking a read_committed long poll parked at the last stable offset.

Long poll: when the bytes read are fewer than min_bytes and no partition had an error, the
fetch waits on `ArrivalWatch` for any partition it reads until max_wait has passed from
when the request arrived, then reads again; it answers with whatever there is at the
deadline (or at once when the DataPath closes).

Quotas (KIP-219, as Kafka's KafkaApis): while a client quota (or a test-bed throttle) applies,
the request path sets `FETCH_QUOTA` to its check; the fetch calls it with the size of the
records it would answer, before the session remembers anything. A throttled fetch is
answered with no partitions at all — no records, its throttle time set by the request path
— and the session is left as the fetch found it (`FetchSessionCache.throttled`); its bytes
are not counted against the quota, so the client gets them on its next fetch.

Zero copy: the broker answers with `fetch_answer`, which encodes the response directly
(wire/fetch_response.py) and leaves every record range of at least SLICE_MIN_BYTES in its
segment file (`RecordsSlice`, its own descriptor); the connection sends those with sendfile
between the bytes of the response around them, or reads them in where it cannot (TLS).
`fetch` builds the same response as kio objects (the reference, byte for byte).
Ownership: a partition this node does not own is answered NOT_LEADER_OR_FOLLOWER before
anything is read, and the connection re-checks ownership before the answer goes out. A
current_leader_epoch (v9+; any negative one means none) older than the partition's leader
epoch is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (data/leader_epochs_api.py), as Kafka checks it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any

from kgroup.batch_layout import BASE_AND_LENGTH, LAST_OFFSET_DELTA, LAST_OFFSET_DELTA_AT, LOG_OVERHEAD
from kgroup.broker.data.context import NOT_LEADER, DataContext, log
from kgroup.broker.data.leader_epochs_api import LeaderEpochError, check_leader_epoch
from kgroup.broker.data.fetch_sessions import (FINAL_EPOCH, INVALID_SESSION_ID, TOPIC_IDS_FROM, Key, PartitionRead,
                                               PlanKind)
from kgroup.wire.kio_build import build, get, item, ms
from kgroup.storage import StorageError
from kgroup.storage.errors import NotOwnedError, OffsetOutOfRangeError, TopicError
from kgroup.storage.records_slice import RecordsSlice
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.fetch_response import FetchPartition, FetchTopic, encode_fetch_response
from kgroup.error_codes import ErrorCode

INT32_MAX = 2**31 - 1
READ_COMMITTED = 1
# The request path's quota check for the Fetch being served (None: no quota applies): given
# the bytes of records the answer would carry, the throttle time (> 0: answer nothing).
FETCH_QUOTA: ContextVar[Callable[[int], int] | None] = ContextVar("kgroup_fetch_quota", default=None)
_UP_TO_LAST_DELTA = LAST_OFFSET_DELTA_AT + LAST_OFFSET_DELTA.size


def _end_of(records: bytes, offset: int) -> int:
    """The offset after the last batch in a Fetch records blob (`offset` when empty): its
    base offset plus its lastOffsetDelta plus one; batches are walked by their length
    (kgroup/batch_layout.py)."""
    pos, last = 0, -1
    while pos + _UP_TO_LAST_DELTA <= len(records):
        last = pos
        pos += LOG_OVERHEAD + BASE_AND_LENGTH.unpack_from(records, pos)[1]
    if last < 0:
        return offset
    base = BASE_AND_LENGTH.unpack_from(records, last)[0]
    return base + LAST_OFFSET_DELTA.unpack_from(records, last + LAST_OFFSET_DELTA_AT)[0] + 1


class FetchAnswer:
    """A Fetch response as the wire layer's parts: the frame's bytes around the records
    that stay in segment files (`RecordsSlice`), for a connection to send with sendfile
    (`zero_copy`) or to read in (`frame`). `error_code` is the response's top-level one."""

    __slots__ = ("parts", "error_code")

    def __init__(self, parts: list[Any], error_code: int) -> None:
        self.parts = parts
        self.error_code = error_code

    @property
    def zero_copy(self) -> bool:
        """Whether any records are left in files."""
        return len(self.parts) > 1

    def frame(self) -> bytes:
        """The whole frame in memory (slices read and closed)."""
        data = b"".join(p if isinstance(p, bytes) else p.read() for p in self.parts)
        self.close()
        return data

    def close(self) -> None:
        for part in self.parts:
            if isinstance(part, RecordsSlice):
                part.close()


async def send_answer(transport: asyncio.WriteTransport, before: list[bytes], answer: FetchAnswer,
                      zero_copy: bool) -> None:
    """Write the responses `before`, then `answer`: its bytes through the transport and its
    record slices with sendfile (`zero_copy`), or everything read in (TLS)."""
    if not zero_copy:
        before.append(answer.frame())
        transport.write(b"".join(before))
        return
    loop = asyncio.get_running_loop()
    pending = before
    try:
        for part in answer.parts:
            if type(part) is bytes:
                pending.append(part)
                continue
            transport.write(b"".join(pending))
            pending = []
            if transport.is_closing():
                raise ConnectionResetError("the client closed the connection")
            with part.file() as file:
                await loop.sendfile(transport, file, part.position, part.size)
        transport.write(b"".join(pending))
    finally:
        answer.close()


async def fetch(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The Fetch response as a kio object, after waiting up to max_wait for min_bytes."""
    cls = response_class(header.api_key, header.api_version)
    error, session_id, topics = await _fetch(ctx, header.api_version, request, slices=False)
    return _to_kio(cls, error, session_id, topics)


async def fetch_answer(ctx: DataContext, header: RequestHeader, request: Any) -> FetchAnswer:
    """The same response encoded directly, its large record ranges left in the segment
    files for sendfile."""
    error, session_id, topics = await _fetch(ctx, header.api_version, request, slices=True)
    return FetchAnswer(encode_fetch_response(header.api_version, header.correlation_id, error, session_id, topics),
                       error)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


async def _fetch(ctx: DataContext, version: int, request: Any,
                 slices: bool) -> tuple[int, int, list[FetchTopic]]:
    """(error, session id, topics) of the answer."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(ms(request.max_wait), 0) / 1000
    names_by_id = ctx.data.names_by_id()

    # 1. Sessions (fetch_sessions.py): what to read — the request's partitions, or (an
    #    incremental fetch) its session's — or a session error, answered without reading.
    session_id = int(get(request, "session_id", INVALID_SESSION_ID))
    plan = ctx.fetch_sessions.plan(version, session_id, int(get(request, "session_epoch", FINAL_EPOCH)),
                                   _replica_id(request) >= 0, _asks(request, version),
                                   _forgotten(request, version), _now_ms())
    quota = FETCH_QUOTA.get()
    if plan.kind is PlanKind.ERROR:
        if quota is not None and quota(0) > 0:
            return ErrorCode.NONE, INVALID_SESSION_ID, []
        return plan.error, INVALID_SESSION_ID, []

    # 2. An isolation level Kafka cannot read fails the whole fetch once it reads anything
    #    (a partition that exists); the session has changed already, as on Kafka.
    isolation = int(get(request, "isolation_level", 0))
    if isolation not in (0, READ_COMMITTED) and _reads_any(ctx, plan.asks, version, names_by_id):
        return ErrorCode.UNKNOWN_SERVER_ERROR, session_id, _failed_topics(request, version)

    # 3. Read; wait for more while below min_bytes; read again. Long polls wake on the
    #    appends that ring a watched partition, never by polling.
    keys = [(name, key[1]) for key, _ in plan.asks
            if (name := _name_of(key, version, names_by_id)) is not None]
    while True:
        entries, size, errors = _read(ctx, plan.asks, version, isolation == READ_COMMITTED,
                                      int(get(request, "max_bytes", INT32_MAX)), slices, names_by_id)
        if (size >= int(request.min_bytes) or errors or ctx.watch.closed
                or loop.time() >= deadline or not keys):
            break
        _close_slices(p for _, _, _, p in entries)
        await ctx.watch.wait(keys, deadline - loop.time())
        names_by_id = ctx.data.names_by_id()

    # 4. Over a quota: no partitions, the session as it was (see the module).
    if quota is not None and quota(sum(_records_size(p) for _, _, _, p in entries)) > 0:
        _close_slices(p for _, _, _, p in entries)
        throttled = ctx.fetch_sessions.throttled(plan)
        return throttled.error, throttled.session_id, []

    # 5. The answer: an incremental one lists only partitions with something new.
    answer = ctx.fetch_sessions.answer(plan, [
        PartitionRead(key, p.error_code, p.high_watermark, p.log_start_offset, len(p.records) > 0)
        for key, _, _, p in entries], _now_ms())
    _close_slices(p for (_, _, _, p), kept in zip(entries, answer.keep) if not kept)
    topics: list[FetchTopic] = []
    for (_, name, topic_id, p), kept in zip(entries, answer.keep):
        if kept:
            _add_topic(topics, name, topic_id, [p])
    return answer.error, answer.session_id, topics


def _records_size(p: FetchPartition) -> int:
    records = p.records
    return 0 if records is None else records.size if isinstance(records, RecordsSlice) else len(records)


def _replica_id(request: Any) -> int:
    state = get(request, "replica_state", None)
    return int(state.replica_id) if state is not None else int(get(request, "replica_id", -1))


def _asks(request: Any, version: int) -> list[tuple[Key, Any]]:
    """The partitions a fetch lists, keyed as its session knows them (by topic id from v13,
    else by name), each once: Kafka keys a fetch by partition, so a partition asked for twice
    is read as first asked, and a topic that names no partition is not answered at all."""
    asks: dict[Key, Any] = {}
    for topic in request.topics:
        ident = get(topic, "topic_id", None) if version >= TOPIC_IDS_FROM else topic.topic
        for p in topic.partitions:
            asks.setdefault((ident, int(p.partition)), p)
    return list(asks.items())


def _forgotten(request: Any, version: int) -> list[Key]:
    """The partitions an incremental fetch drops from its session."""
    return [(get(t, "topic_id", None) if version >= TOPIC_IDS_FROM else t.topic, int(index))
            for t in get(request, "forgotten_topics_data", None) or () for index in t.partitions]


def _name_of(key: Key, version: int, names_by_id: Mapping[uuid.UUID, str]) -> str | None:
    """The topic name of a session key (None: a topic id that names no topic)."""
    return names_by_id.get(key[0]) if version >= TOPIC_IDS_FROM else key[0]  # type: ignore[return-value]


def _reads_any(ctx: DataContext, asks: Any, version: int, names_by_id: Mapping[uuid.UUID, str]) -> bool:
    """Whether any asked partition exists (Kafka reads the log of those only)."""
    topics = ctx.data.topics()
    for key, _ in asks:
        meta = topics.get(_name_of(key, version, names_by_id))  # type: ignore[arg-type]
        if meta is not None and 0 <= key[1] < meta.partitions:
            return True
    return False


def _failed_topics(request: Any, version: int) -> list[FetchTopic]:
    """A failed fetch's topics as Kafka answers them: before v13 every requested partition
    with the error (UNKNOWN_SERVER_ERROR; an empty list of aborted transactions), from v13 none."""
    if version >= TOPIC_IDS_FROM:
        return []
    return [FetchTopic(t.topic, None, [FetchPartition(int(p.partition), ErrorCode.UNKNOWN_SERVER_ERROR, aborted=())
                                       for p in t.partitions]) for t in request.topics]


def _close_slices(partitions: Iterable[FetchPartition]) -> None:
    for p in partitions:
        if isinstance(p.records, RecordsSlice):
            p.records.close()


def _to_kio(cls: Any, error: int, session_id: int, topics: list[FetchTopic]) -> Any:
    """The kio response for what `_read` found (records read into memory)."""
    topic_cls = item(cls, "responses")
    part_cls = item(topic_cls, "partitions")
    aborted_cls = item(part_cls, "aborted_transactions")
    return build(cls, throttle_time=0, error_code=error, session_id=session_id, responses=tuple(
        build(topic_cls, topic=t.name, topic_id=t.topic_id, partitions=tuple(
            build(part_cls, partition_index=p.index, error_code=p.error_code, high_watermark=p.high_watermark,
                  last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset,
                  aborted_transactions=None if p.aborted is None else tuple(
                      build(aborted_cls, producer_id=pid, first_offset=first) for pid, first in p.aborted),
                  preferred_read_replica=-1,
                  records=p.records if isinstance(p.records, bytes) else _read_slice(p.records))
            for p in t.partitions))
        for t in topics))


def _read_slice(records: RecordsSlice) -> bytes:
    try:
        return records.read()
    finally:
        records.close()


Entry = tuple[Key, str, Any, FetchPartition]   # (session key, topic name, topic id, answer)


def _read(ctx: DataContext, asks: Any, version: int, read_committed: bool, max_bytes: int, slices: bool,
          names_by_id: Mapping[uuid.UUID, str]) -> tuple[list[Entry], int, bool]:
    """One pass over the partitions to read, in order: (entries, bytes of records, any
    error). With `slices`, large record ranges stay in their files (`RecordsSlice`)."""
    remaining = max_bytes if max_bytes > 0 else INT32_MAX
    total = 0
    got_data = False
    errors = False
    entries: list[Entry] = []
    for key, p in asks:
        index = key[1]
        name = _name_of(key, version, names_by_id)
        topic_id = key[0] if version >= TOPIC_IDS_FROM else None
        if name is None:
            # v13+ names topics by id only (the zero id too): an id that names none is UNKNOWN_TOPIC_ID.
            entries.append((key, "", topic_id, FetchPartition(index, ErrorCode.UNKNOWN_TOPIC_ID)))
            errors = True
            continue
        try:
            plog = ctx.data.partition_log(name, index)
            if not plog.owned:
                raise NotOwnedError(f"{name}-{index} was taken over by another node")
            # Kafka's Fetch takes any negative epoch for "not given" (-1 only, elsewhere).
            check_leader_epoch(max(int(get(p, "current_leader_epoch", -1)), -1), plog.leader_epoch)
            start, end = plog.log_start_offset, plog.log_end_offset
            offset = int(p.fetch_offset)
            if not start <= offset <= end:
                raise OffsetOutOfRangeError(f"{name}-{index}: offset {offset} outside [{start}, {end}]")
            state = ctx.producers.of((name, index), plog)
            stable = state.last_stable_offset(end)
            upto = stable if read_committed else end
            # KIP-74: only the first partition with data may exceed the limits.
            limit = min(int(p.partition_max_bytes), remaining)
            records: Any = b""
            if offset < upto and (limit > 0 or not got_data):
                upto_arg = upto if read_committed else None
                records = (plog.read_slice(offset, max(limit, 0), upto_arg) if slices
                           else plog.read(offset, max(limit, 0), upto_arg))
                if got_data and len(records) > limit:
                    if isinstance(records, RecordsSlice):
                        records.close()
                    records = b""
            size = len(records)
            if size:
                got_data = True
                remaining -= size
                total += size
            aborted = None
            if read_committed:
                records_end = (records.end_offset if isinstance(records, RecordsSlice)
                               else _end_of(records, offset))
                aborted = [(a.producer_id, a.first_offset) for a in state.aborted_between(offset, records_end)]
            answer = FetchPartition(index, ErrorCode.NONE, end, stable, start, aborted, records)
        except TopicError:
            answer = FetchPartition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        except NOT_LEADER:
            answer = FetchPartition(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        except LeaderEpochError as exc:
            answer = FetchPartition(index, exc.code)
        except OffsetOutOfRangeError as exc:
            log.debug("fetch: %s", exc)
            answer = FetchPartition(index, ErrorCode.OFFSET_OUT_OF_RANGE)
        except StorageError as exc:
            log.error("fetch from %s-%d failed in storage: %s", name, index, exc)
            answer = FetchPartition(index, ErrorCode.KAFKA_STORAGE_ERROR)
        errors = errors or answer.error_code != ErrorCode.NONE
        entries.append((key, name, topic_id, answer))
    return entries, total, errors


def _add_topic(topics: list[FetchTopic], name: str, topic_id: Any, parts: list) -> None:
    """Add a topic's answered partitions: none, no entry; a topic named again right after
    itself, one entry. A partition answered with an error lists no aborted transactions (an
    empty list, Kafka's default); one read uncommitted lists none at all (null)."""
    if not parts:
        return
    parts = [p._replace(aborted=()) if p.error_code and p.aborted is None else p for p in parts]
    last = topics[-1] if topics else None
    if last is not None and (last.name, last.topic_id) == (name, topic_id):
        last.partitions.extend(parts)     # (a list: built here)
    else:
        topics.append(FetchTopic(name, topic_id, parts))
