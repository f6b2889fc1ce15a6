"""Fetch (data/apis.py: the versions served): read whole batches, long-poll for MinBytes, no fetch sessions.

Version notes: v4 isolation level and last_stable_offset; v5 log_start_offset; v7 fetch
sessions (KIP-227); v11 preferred_read_replica (always -1) and rack_id; v12 flexible,
last_fetched_epoch / diverging_epoch (leader epoch never changes, so never diverges); v13
topics by id only (an unknown id → UNKNOWN_TOPIC_ID); v15 replica_state; v17/v18
follower-only fields. Follower fetches (replica_id >= 0) are not special-cased.

Fetch sessions: we never create one. Every response carries session_id 0, which tells the
client the session was not created, so kafka-python, aiokafka, librdkafka and Java send a
full fetch request every time. A full request (epoch 0 or -1) is served whatever session id
it carries (Kafka closes that session); an incremental one (epoch > 0) gets
FETCH_SESSION_ID_NOT_FOUND, which makes the client fall back to a full fetch.

Sizes (KIP-74): partitions are read in request order; each gets at most its
partition_max_bytes and what is left of the request's max_bytes, except that the first
partition that has data returns at least one whole batch even if it is larger than both.

Transactions (KIP-98): every partition answers its last stable offset (the first offset of
its earliest open transaction, else the high watermark). A read_committed fetch
(isolation_level 1) gets only batches below it, with the aborted transactions that overlap
what it got, so the client drops their records; a marker that ends a transaction rings the
partition, waking a read_committed long poll parked at the last stable offset.

Long poll: when the bytes read are fewer than min_bytes and no partition had an error, the
fetch waits on `ArrivalWatch` for any requested partition until max_wait has passed from
when the request arrived, then reads again; it answers with whatever there is at the
deadline (or at once when the DataPath closes).

Zero copy: the broker answers with `fetch_answer`, which encodes the response directly
(wire/fetch_response.py) and leaves every record range of at least SLICE_MIN_BYTES in its
segment file (`RecordsSlice`, its own descriptor); the connection sends those with sendfile
between the bytes of the response around them, or reads them in where it cannot (TLS).
`fetch` builds the same response as kio objects (the reference, byte for byte).
Ownership: a partition this node does not own is answered NOT_LEADER_OR_FOLLOWER before
anything is read, and the connection re-checks ownership before the answer goes out.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from kgroup.batch_layout import BASE_AND_LENGTH, LAST_OFFSET_DELTA, LAST_OFFSET_DELTA_AT, LOG_OVERHEAD
from kgroup.broker.data.context import NOT_LEADER, DataContext, PartitionKey, log
from kgroup.wire.kio_build import build, get, item, ms
from kgroup.storage import StorageError
from kgroup.storage.errors import NotOwnedError, OffsetOutOfRangeError, TopicError
from kgroup.storage.records_slice import RecordsSlice
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.fetch_response import FetchPartition, FetchTopic, encode_fetch_response
from kgroup.error_codes import ErrorCode

INT32_MAX = 2**31 - 1
READ_COMMITTED = 1
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


async def send_answer(writer: asyncio.StreamWriter, before: list[bytes], answer: FetchAnswer,
                      zero_copy: bool) -> None:
    """Write the responses `before`, then `answer`: its bytes through the transport and its
    record slices with sendfile (`zero_copy`), or everything read in (TLS)."""
    transport = writer.transport
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
    error, topics = await _fetch(ctx, request, slices=False)
    return _to_kio(cls, error, topics)


async def fetch_answer(ctx: DataContext, header: RequestHeader, request: Any) -> FetchAnswer:
    """The same response encoded directly, its large record ranges left in the segment
    files for sendfile."""
    error, topics = await _fetch(ctx, request, slices=True)
    return FetchAnswer(encode_fetch_response(header.api_version, header.correlation_id, error, 0, topics),
                       error)


async def _fetch(ctx: DataContext, request: Any, slices: bool) -> tuple[int, list[FetchTopic]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(ms(request.max_wait), 0) / 1000

    # 1. Sessions: full requests (epoch 0 "new session", -1 "sessionless", whatever the
    #    session id) are served; an incremental one (epoch > 0) names a session we never made.
    session_epoch = int(get(request, "session_epoch", -1))
    if session_epoch not in (0, -1):
        return ErrorCode.FETCH_SESSION_ID_NOT_FOUND, []

    # 2. Read; wait for more while below min_bytes; read again. Long polls wake on the
    #    appends that ring a watched partition, never by polling.
    keys = _watched_keys(ctx, request)
    while True:
        topics, size, errors = _read(ctx, request, slices)
        if (size >= int(request.min_bytes) or errors or ctx.watch.closed
                or loop.time() >= deadline or not keys):
            return ErrorCode.NONE, topics
        _close_slices(topics)
        await ctx.watch.wait(keys, deadline - loop.time())


def _close_slices(topics: list[FetchTopic]) -> None:
    for topic in topics:
        for p in topic.partitions:
            if isinstance(p.records, RecordsSlice):
                p.records.close()


def _to_kio(cls: Any, error: int, topics: list[FetchTopic]) -> Any:
    """The kio response for what `_read` found (records read into memory)."""
    topic_cls = item(cls, "responses")
    part_cls = item(topic_cls, "partitions")
    aborted_cls = item(part_cls, "aborted_transactions")
    return build(cls, throttle_time=0, error_code=error, session_id=0, responses=tuple(
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


def _topic_name(ctx: DataContext, topic: Any, names_by_id: dict[uuid.UUID, str]) -> str | None:
    name = get(topic, "topic", None)
    if name is not None:
        return name
    return names_by_id.get(get(topic, "topic_id", None))


def _watched_keys(ctx: DataContext, request: Any) -> list[PartitionKey]:
    names_by_id = {m.topic_id: n for n, m in ctx.data.topics().items()}
    keys = []
    for topic in request.topics:
        name = _topic_name(ctx, topic, names_by_id)
        if name is not None:
            keys.extend((name, int(p.partition)) for p in topic.partitions)
    return keys


def _read(ctx: DataContext, request: Any, slices: bool) -> tuple[list[FetchTopic], int, bool]:
    """One pass over the requested partitions: (topics, bytes of records, any error). With
    `slices`, large record ranges stay in their files (`RecordsSlice`)."""
    names_by_id = {m.topic_id: n for n, m in ctx.data.topics().items()}
    read_committed = int(get(request, "isolation_level", 0)) == READ_COMMITTED
    remaining = int(get(request, "max_bytes", INT32_MAX))
    remaining = remaining if remaining > 0 else INT32_MAX
    total = 0
    got_data = False
    errors = False
    topics: list[FetchTopic] = []
    # Kafka keys a fetch by partition: a partition asked for twice is answered once (where
    # first asked), and a topic that names no partition is not answered at all.
    seen: set[tuple[Any, int]] = set()
    for topic in request.topics:
        name = _topic_name(ctx, topic, names_by_id)
        topic_id = get(topic, "topic_id", None)
        # v13+ names topics by id only (the zero id too): an id that names none is UNKNOWN_TOPIC_ID.
        unknown = (ErrorCode.UNKNOWN_TOPIC_ID if name is None and (topic_id is not None or not hasattr(topic, "topic"))
                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        parts = []
        for p in topic.partitions:
            index = int(p.partition)
            if _seen_before(seen, (name if name is not None else topic_id, index)):
                continue
            if name is None:
                parts.append(FetchPartition(index, unknown))
                errors = True
                continue
            try:
                plog = ctx.data.partition_log(name, index)
                if not plog.owned:
                    raise NotOwnedError(f"{name}-{index} was taken over by another node")
                start, end = plog.log_start_offset, plog.log_end_offset
                offset = int(p.fetch_offset)
                if not start <= offset <= end:
                    raise OffsetOutOfRangeError(f"{name}-{index}: offset {offset} outside [{start}, {end}]")
                state = ctx.producers.of((name, index), plog)
                stable = state.last_stable_offset(end)
                upto = stable if read_committed else end
                # 3. KIP-74: only the first partition with data may exceed the limits.
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
                parts.append(FetchPartition(index, ErrorCode.NONE, end, stable, start, aborted, records))
            except TopicError:
                parts.append(FetchPartition(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                errors = True
            except NOT_LEADER:
                parts.append(FetchPartition(index, ErrorCode.NOT_LEADER_OR_FOLLOWER))
                errors = True
            except OffsetOutOfRangeError as exc:
                log.debug("fetch: %s", exc)
                parts.append(FetchPartition(index, ErrorCode.OFFSET_OUT_OF_RANGE))
                errors = True
            except StorageError as exc:
                log.error("fetch from %s-%d failed in storage: %s", name, index, exc)
                parts.append(FetchPartition(index, ErrorCode.KAFKA_STORAGE_ERROR))
                errors = True
        _add_topic(topics, name if name is not None else "", topic_id, parts)
    return topics, total, errors


def _seen_before(seen: set[tuple[Any, int]], key: tuple[Any, int]) -> bool:
    """Whether this partition was asked for earlier in the request (then it is not answered again)."""
    if key in seen:
        return True
    seen.add(key)
    return False


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
