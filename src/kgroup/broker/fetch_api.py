"""Fetch (api 1), v4–v18: read whole batches, long-poll for MinBytes, no fetch sessions.

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
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from typing import Any

from kgroup.broker.data_api import NOT_LEADER, DataContext, DataError, PartitionKey, log
from kgroup.wire.kio_build import build, get, item, ms
from kgroup.storage import StorageError
from kgroup.storage.errors import NotOwnedError, OffsetOutOfRangeError, TopicError
from kgroup.wire import RequestHeader, response_class

INT32_MAX = 2**31 - 1
READ_COMMITTED = 1
_BASE_LENGTH = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_UP_TO_LAST_DELTA = 27


def _end_of(records: bytes, offset: int) -> int:
    """The offset after the last batch in a Fetch records blob (`offset` when empty): its
    base offset (bytes 0-8) plus its lastOffsetDelta (bytes 23-27) plus one; batches are
    walked by their length (bytes 8-12, counting what follows it)."""
    pos, last = 0, -1
    while pos + _UP_TO_LAST_DELTA <= len(records):
        last = pos
        pos += 12 + _BASE_LENGTH.unpack_from(records, pos)[1]
    if last < 0:
        return offset
    base = _BASE_LENGTH.unpack_from(records, last)[0]
    return base + _LAST_DELTA.unpack_from(records, last + 23)[0] + 1


def _answer_error(ctx: DataContext, cls: Any, code: DataError) -> Any:
    return build(cls, throttle_time=0, error_code=code, session_id=0, responses=())


async def fetch(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The Fetch response, after waiting up to max_wait for min_bytes."""
    cls = response_class(1, header.api_version)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(ms(request.max_wait), 0) / 1000

    # 1. Sessions: full requests (epoch 0 "new session", -1 "sessionless", whatever the
    #    session id) are served; an incremental one (epoch > 0) names a session we never made.
    session_epoch = int(get(request, "session_epoch", -1))
    if session_epoch not in (0, -1):
        return _answer_error(ctx, cls, DataError.FETCH_SESSION_ID_NOT_FOUND)

    # 2. Read; wait for more while below min_bytes; read again.
    keys = _watched_keys(ctx, request)
    while True:
        response, size, errors = _read(ctx, cls, request)
        if (size >= int(request.min_bytes) or errors or ctx.watch.closed
                or loop.time() >= deadline or not keys):
            return response
        await ctx.watch.wait(keys, deadline - loop.time())


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


def _read(ctx: DataContext, cls: Any, request: Any) -> tuple[Any, int, bool]:
    """One pass over the requested partitions: (response, bytes of records, any error)."""
    topic_cls = item(cls, "responses")
    part_cls = item(topic_cls, "partitions")
    names_by_id = {m.topic_id: n for n, m in ctx.data.topics().items()}
    read_committed = int(get(request, "isolation_level", 0)) == READ_COMMITTED
    aborted_cls = item(part_cls, "aborted_transactions")
    remaining = int(get(request, "max_bytes", INT32_MAX))
    if remaining <= 0:
        remaining = INT32_MAX
    total = 0
    got_data = False
    errors = False
    topics = []
    for topic in request.topics:
        name = _topic_name(ctx, topic, names_by_id)
        topic_id = get(topic, "topic_id", None)
        unknown = (DataError.UNKNOWN_TOPIC_ID if name is None and topic_id is not None
                   else DataError.UNKNOWN_TOPIC_OR_PARTITION)
        parts = []
        for p in topic.partitions:
            index = int(p.partition)

            def failure(code: DataError) -> Any:
                return build(part_cls, partition_index=index, error_code=code, high_watermark=-1,
                             last_stable_offset=-1, log_start_offset=-1,
                             aborted_transactions=None, preferred_read_replica=-1, records=b"")

            if name is None:
                parts.append(failure(unknown))
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
                records = b""
                if offset < upto and (limit > 0 or not got_data):
                    records = plog.read(offset, max(limit, 0), upto if read_committed else None)
                    if got_data and len(records) > limit:
                        records = b""
                if records:
                    got_data = True
                    remaining -= len(records)
                    total += len(records)
                aborted = None
                if read_committed:
                    aborted = tuple(build(aborted_cls, producer_id=a.producer_id, first_offset=a.first_offset)
                                    for a in state.aborted_between(offset, _end_of(records, offset)))
                parts.append(build(part_cls, partition_index=index, error_code=DataError.NONE,
                                   high_watermark=end, last_stable_offset=stable,
                                   log_start_offset=start, aborted_transactions=aborted,
                                   preferred_read_replica=-1, records=records))
            except TopicError:
                parts.append(failure(DataError.UNKNOWN_TOPIC_OR_PARTITION))
                errors = True
            except NOT_LEADER:
                parts.append(failure(DataError.NOT_LEADER_OR_FOLLOWER))
                errors = True
            except OffsetOutOfRangeError as exc:
                log.debug("fetch: %s", exc)
                parts.append(failure(DataError.OFFSET_OUT_OF_RANGE))
                errors = True
            except StorageError as exc:
                log.error("fetch from %s-%d failed in storage: %s", name, index, exc)
                parts.append(failure(DataError.KAFKA_STORAGE_ERROR))
                errors = True
        topics.append(build(topic_cls, topic=name if name is not None else "", topic_id=topic_id,
                            partitions=tuple(parts)))
    response = build(cls, throttle_time=0, error_code=DataError.NONE, session_id=0,
                     responses=tuple(topics))
    return response, total, errors
