"""Produce (data/apis.py: the versions served): validate every batch, append, wait for durability, answer.

Version notes: v3 is the first with record batch v2 only (magic 2) and a transactional id
(required when a batch is transactional); v5 adds
log_start_offset; v8 adds record_errors and error_message; v9 is flexible; v10–v12 add
nothing we fill (current_leader / node_endpoints stay at their defaults: KIP-951 would
let a NOT_LEADER_OR_FOLLOWER name the new leader; clients refresh Metadata instead); v13
names topics by id (KIP-516, `topic_names`): an id no topic has (the zero id too) is
UNKNOWN_TOPIC_ID for each of its partitions, and the answer names topics by id.

In a cluster only the partition's owner appends (NOT_LEADER_OR_FOLLOWER elsewhere); a write
refused by the ownership fence, one whose fsync completed after another node took the
partition over, or one whose log a hand-over closed while it waited (LogHandedOverError), is
answered NOT_LEADER_OR_FOLLOWER, never as a success; a log that failed or was closed
otherwise is KAFKA_STORAGE_ERROR.

Per partition, in order: the topic must not be internal (`__kgroup_events`:
INVALID_TOPIC_EXCEPTION, as Kafka answers a client's append to `__consumer_offsets`); the
topic partition must exist (UNKNOWN_TOPIC_OR_PARTITION — Kafka does not auto-create on
produce, clients create through Metadata); every batch must parse
and validate (wrong magic → UNSUPPORTED_FOR_MESSAGE_FORMAT, framing/CRC → CORRUPT_MESSAGE,
rule breaks → INVALID_RECORD, missing codec → UNSUPPORTED_COMPRESSION_TYPE); no batch may
exceed max.message.bytes (topic config, else the broker's) → MESSAGE_TOO_LARGE. Only when
the whole partition is valid are its batches appended, so a partition is all or nothing and
a bad partition never fails the others.

Idempotence and transactions (KIP-98): batches with a producer id are checked against the
partition's producer state (broker/data/producer_states.py) before anything is appended: a
duplicate of one of the producer's last five batches is not stored again and is answered
with where it landed; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
INVALID_PRODUCER_EPOCH. A transactional batch must come with the request's transactional id
(else TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers) and its transaction must be
Ongoing at the producer's epoch with the partition added (KIP-890 part 1, asked of the
transaction coordinator through `DataContext.verify_txn`): a write after the transaction
ended, or of a fenced producer, never lands. Durability: acks=1 and acks=0 flush to the kernel,
acks=-1 waits for the fsync policy (`Durability.durable`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from kgroup.batch_layout import LENGTH, LENGTH_AT, LOG_OVERHEAD, MAGIC, MAGIC_AT
from kgroup.broker.data.context import NOT_LEADER, DataContext, log
from kgroup.broker.internal_topics import is_internal
from kgroup.broker.data.producer_states import batch_info
from kgroup.core.transactions.producer_state import ProducerStateError
from kgroup.error_codes import ErrorCode
from kgroup.wire.kio_build import build, get, item
from kgroup.storage import PartitionLog, StorageError
from kgroup.storage.errors import InvalidBatchError, TopicError
from kgroup.wire import RecordError, RequestHeader, response_class
from kgroup.wire.record_batch import RecordBatch, validate_produce

def wrong_magic(blob: bytes) -> int | None:
    """The first magic byte other than 2 found while walking the batch framing, or None."""
    pos = 0
    while pos + MAGIC_AT < len(blob):
        if blob[pos + MAGIC_AT] != MAGIC:
            return blob[pos + MAGIC_AT]
        (length,) = LENGTH.unpack_from(blob, pos + LENGTH_AT)
        if length <= 0:
            return None
        pos += LOG_OVERHEAD + length
    return None


def max_message_bytes(ctx: DataContext, configs: dict[str, str] | Any) -> int:
    raw = configs.get("max.message.bytes") if configs else None
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            pass
    return ctx.config.max_message_bytes


class PartitionFailure(Exception):
    """One partition of a produce fails with `code`."""

    def __init__(self, code: int, message: str, *, answered: bool = True, log_start: int = -1) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # Whether the answer carries the message: Kafka's does for a batch it refuses to
        # append, not for a producer's epoch or sequence refused (it logs those).
        self.answered = answered
        # The partition's log start offset, which Kafka's answer carries when the log itself
        # refused the batch (its producer state), and not for a check made before the log.
        self.log_start = log_start


def _validate(ctx: DataContext, topic: str, partition: int, records: bytes | None
              ) -> tuple[PartitionLog, list[RecordBatch]]:
    # 1. The partition exists, and is not the broker's own: Kafka's ReplicaManager refuses
    #    client appends to an internal topic with InvalidTopicException.
    if is_internal(topic):
        raise PartitionFailure(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
    try:
        try:
            meta = ctx.data.topic(topic)
        except TopicError:
            if not ctx.data.refresh_topics():   # created through another node just now?
                raise
            meta = ctx.data.topic(topic)
        plog = ctx.data.partition_log(topic, partition)
    except TopicError:
        raise PartitionFailure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"unknown topic partition {topic}-{partition}", answered=False) from None
    except NOT_LEADER:
        raise PartitionFailure(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                               f"this node does not lead {topic}-{partition}") from None
    # 2. Every batch is well formed, magic 2.
    blob = bytes(records) if records is not None else b""
    try:
        batches = validate_produce(blob)
    except RecordError as exc:
        magic = wrong_magic(blob)
        if magic is not None:
            raise PartitionFailure(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                                   f"record batch magic {magic}; only magic 2 is accepted") from None
        raise PartitionFailure(ErrorCode(exc.error_code), str(exc)) from None
    # 3. No batch is larger than max.message.bytes.
    limit = max_message_bytes(ctx, meta.configs)
    for batch in batches:
        if len(batch.data) > limit:
            raise PartitionFailure(ErrorCode.MESSAGE_TOO_LARGE,
                                   f"record batch of {len(batch.data)} bytes exceeds max.message.bytes={limit}")
    return plog, batches


# The first Produce version whose clients take TRANSACTION_ABORTABLE (Kafka: genericErrorSupported).
FIRST_ABORTABLE_PRODUCE = 11

# What a transaction coordinator's verification error means to a producer (Kafka's mapping
# for produce requests of the versions our clients send).
_VERIFY_ERRORS = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: ErrorCode.INVALID_TXN_STATE,
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
}


def _append_checked(ctx: DataContext, key: tuple[str, int], plog: PartitionLog, batches: list[RecordBatch],
                    transactional_id: str | None, version: int = 9) -> int:
    """Append batches that carry a producer id (or several batches) after checking them
    against the partition's producer state; the base offset to answer (a duplicate's
    original one)."""
    # 1. Transactional batches: the transaction must hold this partition now (KIP-890). The
    #    sequence under verification is remembered first, whatever the coordinator answers:
    #    a later batch must not overtake one that failed verification with a retriable error.
    state = ctx.producers.of(key, plog)
    txn = next((b.header for b in batches if b.header.is_transactional), None)
    if txn is not None:
        if not transactional_id:
            raise PartitionFailure(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                   "transactional records need the request's transactional id")
        state.begin_verification(txn.producer_id, txn.producer_epoch, txn.base_sequence, int(time.time() * 1000))
        verdict = ctx.verify_txn(transactional_id, txn.producer_id, txn.producer_epoch, (key,)) \
            if ctx.verify_txn is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
        if verdict != ErrorCode.NONE:
            code = _VERIFY_ERRORS.get(verdict, ErrorCode.INVALID_TXN_STATE)
            if code == ErrorCode.INVALID_TXN_STATE and version >= FIRST_ABORTABLE_PRODUCE:
                # v11+ clients know TRANSACTION_ABORTABLE (KIP-890): abort and go on, not fatal.
                raise PartitionFailure(ErrorCode.TRANSACTION_ABORTABLE, f"transaction {transactional_id}: "
                                       f"{verdict.name}", answered=False)
            # Kafka explains a batch outside any ongoing transaction; an old epoch it does not.
            raise PartitionFailure(code, f"transaction {transactional_id}: {verdict.name}",
                                   answered=code == ErrorCode.INVALID_TXN_STATE)
    # 2. Sequence numbers and epochs, for all batches before any is stored.
    infos = [batch_info(b.header) for b in batches]
    try:
        verdicts = state.check(infos)
    except ProducerStateError as exc:
        raise PartitionFailure(exc.code, exc.message, answered=False, log_start=plog.log_start_offset) from None
    # 3. Append what is new; a duplicate is answered where it landed before.
    base = -1
    for batch, info, earlier in zip(batches, infos, verdicts):
        if earlier is not None:
            offset = earlier.base_offset
        else:
            offset = plog.append(batch.data)
            state.append(info, offset, offset + info.record_count - 1)
        if base < 0:
            base = offset
    ctx.producers.appended(key, len(batches))
    return base


TOPIC_IDS_FROM = 13


def topic_names(ctx: DataContext, request: Any, version: int) -> list[str | None]:
    """Each request topic's name, in request order: v13+ names topics by id (KIP-516), and an
    id no topic has (the zero id too) is None, answered UNKNOWN_TOPIC_ID; older versions
    name them."""
    if version < TOPIC_IDS_FROM:
        return [t.name for t in request.topic_data]
    ids = [get(t, "topic_id", None) for t in request.topic_data]
    names = ctx.data.names_by_id()
    # An id created through another node just now: read the topics again once.
    if any(i not in names for i in ids if i is not None) and ctx.data.refresh_topics():
        names = ctx.data.names_by_id()
    return [names.get(i) if i is not None else None for i in ids]


def _topic_entry(topic_cls: type, version: int, t: Any, name: str | None, parts: tuple) -> Any:
    """A response topic: by id from v13, else by name."""
    if version >= TOPIC_IDS_FROM:
        return build(topic_cls, topic_id=get(t, "topic_id", None), partition_responses=parts)
    return build(topic_cls, name=name, partition_responses=parts)


def _all_refused(cls: type, version: int, request: Any, names: list[str | None], answer: Any, code: ErrorCode,
                 message: str, exists: Any = None) -> Any:
    """The response that fails every partition of the request with `code` (those for which
    ``exists(topic, index)`` is false with UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers a
    partition it does not know before it looks further; an unknown topic id UNKNOWN_TOPIC_ID)."""
    topic_cls = item(cls, "responses")

    def refused(name: str | None, index: int) -> Any:
        if name is None:
            return answer(index, ErrorCode.UNKNOWN_TOPIC_ID)
        if exists is None or exists(name, index):
            return answer(index, code, message=message)
        return answer(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return build(cls, throttle_time=0, responses=tuple(
        _topic_entry(topic_cls, version, t, name, tuple(refused(name, p.index) for p in t.partition_data))
        for t, name in zip(request.topic_data, names) if t.partition_data))   # (a topic naming none is not answered)


def _exists(ctx: DataContext) -> Any:
    def exists(topic: str, index: int) -> bool:
        try:
            ctx.data.partition_log(topic, index)
        except TopicError:
            return False
        except NOT_LEADER:      # it exists, led elsewhere
            return True
        return True
    return exists


async def _make_durable(ctx: DataContext, logs: dict[int, PartitionLog], acks: int) -> tuple[dict, dict]:
    """Sync (acks=-1) or flush the logs appended to; (failed, lost) by id(log): the logs
    whose storage failed, and those taken over by another node before the write counted."""
    failed: dict[int, str] = {}
    lost: dict[int, str] = {}
    if acks == -1:
        outcomes = await asyncio.gather(
            *(ctx.durability.durable(plog, plog.log_end_offset) for plog in logs.values()),
            return_exceptions=True)
        for key, outcome in zip(logs, outcomes):
            if isinstance(outcome, NOT_LEADER):
                lost[key] = str(outcome)
            elif isinstance(outcome, BaseException):
                log.error("produce: log %s did not become durable: %s", logs[key].directory, outcome)
                failed[key] = str(outcome)
    else:
        for key, plog in logs.items():
            try:
                plog.flush()
            except NOT_LEADER as exc:
                lost[key] = str(exc)
            except StorageError as exc:
                log.error("produce: flushing %s failed: %s", plog.directory, exc)
                failed[key] = str(exc)
    if lost:
        ctx.cluster.fenced()
    return failed, lost


def _append_one(ctx: DataContext, name: str, p: Any, transactional_id: str | None, version: int,
                answer: Callable[..., Any]) -> tuple[PartitionLog, int] | Any:
    """Validate and append one partition's records: (its log, the base offset), or the
    partition's error answer (nothing appended)."""
    try:
        plog, batches = _validate(ctx, name, p.index, p.records)
        if batches[0].header.producer_id < 0 and len(batches) == 1:
            base = plog.append(batches[0].data)      # the plain path: no producer state
        else:
            base = _append_checked(ctx, (name, p.index), plog, batches, transactional_id, version)
        ctx.watch.ring((name, p.index))
        return plog, base
    except PartitionFailure as exc:
        log.debug("produce to %s-%d refused: %s", name, p.index, exc.message)
        return answer(p.index, exc.code, log_start=exc.log_start, message=exc.message if exc.answered else None)
    except InvalidBatchError as exc:
        log.warning("produce to %s-%d: storage refused a batch: %s", name, p.index, exc)
        return answer(p.index, ErrorCode.CORRUPT_MESSAGE, message=str(exc))
    except NOT_LEADER as exc:
        # Another node took the partition over under us (this node was paused).
        ctx.cluster.fenced()
        return answer(p.index, ErrorCode.NOT_LEADER_OR_FOLLOWER, message=str(exc))
    except StorageError as exc:
        log.error("produce to %s-%d failed in storage: %s", name, p.index, exc)
        return answer(p.index, ErrorCode.KAFKA_STORAGE_ERROR, message=str(exc))


async def produce(ctx: DataContext, header: RequestHeader, request: Any) -> Any | None:
    """The Produce response, or None for acks=0 (nothing is sent back)."""
    cls = response_class(header.api_key, header.api_version)
    topic_cls = item(cls, "responses")
    part_cls = item(topic_cls, "partition_responses")
    acks = int(request.acks)
    version = header.api_version
    names = topic_names(ctx, request, version)

    def answer(index: int, code: ErrorCode, base_offset: int = -1, log_start: int = -1,
               message: str | None = None) -> Any:
        return build(part_cls, index=index, error_code=code, base_offset=base_offset,
                     log_append_time=None, log_start_offset=log_start, record_errors=(),
                     error_message=message)

    # 1. acks must be 0, 1 or -1; otherwise every partition that exists fails (one that does
    #    not is UNKNOWN_TOPIC_OR_PARTITION, as Kafka checks it first).
    if acks not in (0, 1, -1):
        return _all_refused(cls, version, request, names, answer, ErrorCode.INVALID_REQUIRED_ACKS,
                            f"acks={acks} is not one of 0, 1, -1", _exists(ctx))

    # 2. Validate and append each partition on its own (a TV2 producer's partitions join its txn first).
    results: dict[tuple[int, int], Any] = {}
    appended: list[tuple[int, int, PartitionLog, int]] = []  # (ti, pi, log, base offset)
    transactional_id = get(request, "transactional_id", None)
    await ctx.join_txn(version, transactional_id, request, names)
    # Kafka keys a produce by partition: a partition named twice is written once, with the
    # records of its last mention, and answered once.
    # (v13: keyed by topic id, an unknown id too.)
    keys = [get(t, "topic_id", None) if version >= TOPIC_IDS_FROM else t.name for t in request.topic_data]
    last = {(keys[ti], p.index): (ti, pi) for ti, t in enumerate(request.topic_data)
            for pi, p in enumerate(t.partition_data)}
    for ti, t in enumerate(request.topic_data):
        name = names[ti]
        for pi, p in enumerate(t.partition_data):
            if last[(keys[ti], p.index)] != (ti, pi):
                continue
            if name is None:
                results[(ti, pi)] = answer(p.index, ErrorCode.UNKNOWN_TOPIC_ID)
                continue
            outcome = _append_one(ctx, name, p, transactional_id, version, answer)
            if isinstance(outcome, tuple):
                appended.append((ti, pi, *outcome))
            else:
                results[(ti, pi)] = outcome

    # 3. Make the appends as durable as acks asks.
    failed, lost = await _make_durable(ctx, {id(plog): plog for _, _, plog, _ in appended}, acks)
    if acks == 0:
        return None

    # 4. Answer in request order.
    for ti, pi, plog, base in appended:
        index = request.topic_data[ti].partition_data[pi].index
        if id(plog) in lost:
            results[(ti, pi)] = answer(index, ErrorCode.NOT_LEADER_OR_FOLLOWER, message=lost[id(plog)])
        elif id(plog) in failed:
            results[(ti, pi)] = answer(index, ErrorCode.KAFKA_STORAGE_ERROR, message=failed[id(plog)])
        else:
            results[(ti, pi)] = answer(index, ErrorCode.NONE, base_offset=base,
                                       log_start=plog.log_start_offset)
    # (Kafka answers per partition, grouped by topic: a topic named twice is one entry, a
    # topic that names no partition is not in its answer.)
    by_topic: dict[Any, tuple[int, list]] = {}
    for ti, t in enumerate(request.topic_data):
        for pi in range(len(t.partition_data)):
            if (ti, pi) in results:
                by_topic.setdefault(keys[ti], (ti, []))[1].append(results[(ti, pi)])
    return build(cls, throttle_time=0, responses=tuple(
        _topic_entry(topic_cls, version, request.topic_data[ti], names[ti], tuple(parts))
        for ti, parts in by_topic.values()))
