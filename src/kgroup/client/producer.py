"""An asyncio Kafka producer: per-partition batching with linger, acks, compression.

How this works: ``send`` picks the partition (explicit, else Kafka's default partitioner:
murmur2 of the key, or a sticky partition per batch for records without a key), appends the
record to that partition's open batch and returns a future for its ``RecordMetadata``. A
batch is ready when it reaches ``batch.size`` bytes or has waited ``linger.ms``. The sender
task groups ready batches by partition leader (the ``ClusterClient``'s) and sends one Produce per
leader, with up to ``max.in.flight.requests.per.connection`` Produce requests in flight per
leader (the connection pipelines them). An error the cluster calls a move or a passing
failure (leader moved, broker unreachable, timeout: ``ClusterClient.recover``) retries the batch
after ``retry.backoff.ms`` up to ``retries`` times, reading the leader again where it moved;
any other error fails the batch's futures.
With ``acks=0`` the futures resolve with offset -1 once the request is written.

Idempotence and transactions (``enable.idempotence``, ``transactional.id``; see
transactions.py): batches carry the producer id, epoch and per-partition sequence numbers;
a partition has at most one batch in flight and a failed batch is resent as it was (same
bytes, same sequence), so the broker stores it once. A transactional producer adds each
partition to its transaction before the partition's first batch goes out, and offers
``init_transactions``, ``begin_transaction``, ``send_offsets_to_transaction``,
``commit_transaction`` and ``abort_transaction``.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kgroup.error_codes import ErrorCode
from kgroup.wire.record_batch import Compression, build_batch, frame_batch
from kgroup.wire.api_keys import ApiKey

from .cluster import Backoff, ClusterClient, Recovery, build_request
from .errors import BrokerError, KafkaClientError
from .lifecycle import AsyncClient, cancel_and_wait
from .partitioner import StickyPartitioner
from .records import BatchMetadata, OffsetAndMetadata, RecordMetadata, TopicPartition
from .security import ClientSecurity
from .settings import PRODUCER_DEFAULTS, resolve
from .transactions import GroupMetadata, TransactionError, TransactionManager, ProducerTxnState

__all__ = ["Producer"]

_RECORD_OVERHEAD = 12
# asyncio.Future itself (the C class), not loop.create_future(): one Python frame less per
# record sent, which the producer's profile showed as ~15% of send().
_Future = asyncio.Future


class _Batch:
    __slots__ = ("tp", "records", "futures", "size", "created", "attempts", "blob", "encoded",
                 "count", "timestamp")

    def __init__(self, tp: TopicPartition, created: float) -> None:
        self.tp = tp
        self.records: list[tuple[bytes | None, bytes | None, Sequence[Any], int]] = []
        self.futures: list[asyncio.Future[RecordMetadata]] = []
        self.size = 0
        self.created = created
        self.attempts = 0
        # The bytes sent, built once: an idempotent retry must be the same batch.
        self.blob: bytes | None = None
        # A bulk batch (send_columns): its records already encoded, how many, their one
        # timestamp; its one future resolves to a BatchMetadata.
        self.encoded: bytes | None = None
        self.count = 0
        self.timestamp = -1


class Producer(AsyncClient):
    """An asyncio producer; see the module comment."""

    def __init__(self, config: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        cfg = dict(config or {})
        for source in (cfg, kwargs):
            if str(source.get("acks", "")).lower() == "all":
                source["acks"] = -1
            if "compression_type" in source:
                source["compression.type"] = source.pop("compression_type")
        self.settings = resolve(PRODUCER_DEFAULTS, cfg, kwargs)
        s = self.settings
        self.acks = int(s["acks"])
        codec = str(s["compression.type"] or "none").upper()
        try:
            self.compression = Compression[codec]
        except KeyError:
            raise ValueError(f"unknown compression.type {s['compression.type']!r}") from None
        self.linger = s["linger.ms"] / 1000
        self.batch_size = int(s["batch.size"])
        self.cluster = ClusterClient(s["bootstrap.servers"], client_id=s["client.id"],
                               timeout=s["request.timeout.ms"] / 1000,
                               security=ClientSecurity.from_settings(s),
                               backoff=Backoff(int(s["retry.backoff.ms"]), 1_000))
        self.partitioner = StickyPartitioner()
        txn_id = s["transactional.id"]
        self.idempotent = bool(s["enable.idempotence"]) or txn_id is not None
        if self.idempotent and self.acks != -1:
            raise ValueError("enable.idempotence and transactional.id need acks=all (-1)")
        self.txn = TransactionManager(self.cluster, txn_id, int(s["transaction.timeout.ms"]),
                                      s["request.timeout.ms"] / 1000)
        # Idempotence: the batch in flight for a partition, and the ones waiting behind it.
        self._busy: dict[TopicPartition, _Batch] = {}
        self._held: dict[TopicPartition, collections.deque[_Batch]] = {}
        self._counts: dict[str, int] = {}
        self._open: dict[TopicPartition, _Batch] = {}
        self._ready: list[_Batch] = []
        self._wake = asyncio.Event()
        self._inflight: dict[int, asyncio.Semaphore] = {}
        self._pending = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None   # set by start(): one lookup, not one per send
        self._sends: set[asyncio.Task[None]] = set()
        self._closed = False

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self.cluster.connect()
        if self.idempotent and not self.txn.transactional:
            await self.txn.init()
        self._task = asyncio.create_task(self._run(), name="kgroup-producer")

    async def stop(self) -> None:
        """Send everything buffered, wait for it, then disconnect."""
        if self._closed:
            return
        await self.flush()
        self._closed = True
        await cancel_and_wait(self._task)
        await self.cluster.close()

    close = stop

    # -- transactions -----------------------------------------------------------------------

    async def init_transactions(self) -> None:
        """Get the transactional id's producer id and epoch, fencing older producers of it
        (and aborting a transaction they left open)."""
        if not self.txn.transactional:
            raise KafkaClientError("init_transactions needs a transactional.id")
        await self.txn.init()

    def begin_transaction(self) -> None:
        """Start a transaction: what is sent until commit or abort is all or nothing."""
        self.txn.begin()

    async def send_offsets_to_transaction(
            self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
            group_metadata: GroupMetadata | str) -> None:
        """Commit these consumer offsets with the transaction (the positions after the
        records it processed). ``group_metadata`` is ``Consumer.group_metadata()``: the
        group refuses the commit if that member is no longer current (KIP-447)."""
        if isinstance(group_metadata, str):
            group_metadata = GroupMetadata(group_metadata)
        await self.txn.send_offsets({TopicPartition(*tp): v for tp, v in offsets.items()}, group_metadata)

    async def commit_transaction(self) -> None:
        """Send everything buffered, then commit; raises if the transaction must abort."""
        self.txn.require(ProducerTxnState.IN_TRANSACTION, ProducerTxnState.ABORTABLE, action="commit")
        await self.flush()
        if self.txn.state is not ProducerTxnState.IN_TRANSACTION:
            self.txn.check_fenced()
            raise TransactionError(f"the transaction cannot commit: {self.txn.error}")
        await self.txn.end(commit=True)

    async def abort_transaction(self) -> None:
        """Wait for what is in flight, then abort: nothing of the transaction is read by
        read_committed consumers."""
        self.txn.require(ProducerTxnState.IN_TRANSACTION, ProducerTxnState.ABORTABLE, action="abort")
        for tp in list(self._open):
            self._close_batch(tp)
        if self._pending:
            await self._idle.wait()
        await self.txn.end(commit=False)

    # -- sending ----------------------------------------------------------------------------

    async def partitions_for(self, topic: str) -> int:
        count = self._counts.get(topic)
        if count is None:
            info = await self.cluster.topic(topic, auto_create=True)
            count = len(info.partitions)
            self._counts[topic] = count
        return count

    async def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, *,
                   partition: int | None = None, timestamp_ms: int | None = None,
                   headers: Sequence[tuple[str, bytes | None]] | None = None
                   ) -> asyncio.Future[RecordMetadata]:
        """Queue one record; returns a future of where it landed."""
        if self._closed:
            raise KafkaClientError("the producer is closed")
        if self.txn.transactional:
            self.txn.require(ProducerTxnState.IN_TRANSACTION, action="send outside a transaction "
                             "(call begin_transaction first)")
        count = self._counts.get(topic)
        if count is None:
            count = await self.partitions_for(topic)
        if partition is None:
            partition = self.partitioner.partition(topic, key, count)
        elif not 0 <= partition < count:
            raise KafkaClientError(f"topic {topic!r} has {count} partitions; there is no partition {partition}",
                                   "pick a partition below the topic's partition count")
        tp = TopicPartition(topic, partition)
        batch = self._open.get(tp)
        if batch is None:
            batch = self._open[tp] = _Batch(tp, time.monotonic())
            if len(self._open) == 1:
                self._wake.set()
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        batch.records.append((key, value, headers or (), timestamp_ms))
        fut: asyncio.Future[RecordMetadata] = _Future(loop=self._loop or asyncio.get_running_loop())
        batch.futures.append(fut)
        batch.size += _RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
        self._pending += 1
        self._idle.clear()
        if batch.size >= self.batch_size:
            self._close_batch(tp)
        if self._pending > 200_000:
            # back-pressure: let the sender catch up
            while self._pending > 100_000:
                await asyncio.sleep(0.001)
        return fut

    async def send_columns(self, topic: str, values: Any, keys: Any = None, headers: Any = None,
                           partitions: Any = None, *, timestamp_ms: int | None = None
                           ) -> list[asyncio.Future[BatchMetadata]]:
        """Queue many records at once from Arrow arrays of the same length (kgroup/client/
        bulk.py): ``values`` and ``keys`` binary or string, ``headers`` list<struct<key,
        value>>, ``partitions`` integers (None or null: the partitioner picks, as ``send``).
        The records are encoded into batches here, without a Python object per record; one
        timestamp for all. Returns a future per batch; each record's partition and order
        within it are what ``send`` of the rows one by one would give (keyless rows:
        sticky, moving on every ``batch.size`` bytes)."""
        import numpy as np   # the bulk path's alone: the per-record path needs no numpy

        from kgroup.wire.columnar import encode_records, record_sizes

        from . import bulk

        if self._closed:
            raise KafkaClientError("the producer is closed")
        if self.txn.transactional:
            self.txn.require(ProducerTxnState.IN_TRANSACTION, action="send outside a transaction "
                             "(call begin_transaction first)")
        n = len(values)
        for name, col in (("keys", keys), ("headers", headers), ("partitions", partitions)):
            if col is not None and len(col) != n:
                raise KafkaClientError(f"send_columns: {name} has {len(col)} rows, values {n}")
        if not n:
            return []
        count = self._counts.get(topic)
        if count is None:
            count = await self.partitions_for(topic)
        value = bulk.columns(values)
        key = bulk.columns(keys) if keys is not None else None
        head = bulk.headers_column(headers)

        def sticky() -> int:
            return self.partitioner.partition(topic, None, count)

        def moved_on(p: int) -> None:
            self.partitioner.batch_closed(topic, p, count)

        part = bulk.plan(n, count, topic, value, key, partitions, self.batch_size, sticky,
                         moved_on)
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        order = np.argsort(part, kind="stable")
        cuts = np.flatnonzero(np.diff(part[order])) + 1
        futures: list[asyncio.Future[BatchMetadata]] = []
        now = time.monotonic()
        loop = self._loop or asyncio.get_running_loop()
        for rows in np.split(order, cuts):
            tp = TopicPartition(topic, int(part[rows[0]]))
            self._close_batch(tp)       # what send() queued for it goes first
            for lo, hi in bulk.split(record_sizes(rows, value, key), self.batch_size):
                batch = _Batch(tp, now)
                batch.encoded = encode_records(rows[lo:hi], value, key, head)
                batch.count = hi - lo
                batch.timestamp = timestamp_ms
                batch.size = len(batch.encoded) + 61
                fut: asyncio.Future[BatchMetadata] = _Future(loop=loop)
                batch.futures.append(fut)
                futures.append(fut)
                self._ready.append(batch)
        self._pending += n
        self._idle.clear()
        self._wake.set()
        if self._pending > 200_000:
            while self._pending > 100_000:
                await asyncio.sleep(0.001)
        return futures

    async def send_and_wait(self, topic: str, value: bytes | None = None,
                            key: bytes | None = None, **kw: Any) -> RecordMetadata:
        return await (await self.send(topic, value, key, **kw))

    async def flush(self) -> None:
        """Send every buffered record now and wait until all are acknowledged."""
        for tp in list(self._open):
            self._close_batch(tp)
        if self._pending:
            await self._idle.wait()

    def _close_batch(self, tp: TopicPartition) -> None:
        batch = self._open.pop(tp, None)
        if batch is not None:
            self._ready.append(batch)
            self.partitioner.batch_closed(tp.topic, tp.partition, self._counts.get(tp.topic, 1))
            self._wake.set()

    # -- the sender -------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            now = time.monotonic()
            for tp, batch in list(self._open.items()):
                if now - batch.created >= self.linger:
                    self._close_batch(tp)
            if self._ready:
                ready, self._ready = self._ready, []
                try:
                    await self._dispatch(ready)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 (the batches' futures carry it; never a silent stop)
                    for batch in ready:
                        if any(not f.done() for f in batch.futures):
                            self._fail(batch, KafkaClientError(f"sending failed: {exc!r}"))
                continue
            self._wake.clear()
            if self._open:
                oldest = min(b.created for b in self._open.values())
                wait = max(0.0, oldest + self.linger - time.monotonic())
                try:
                    # Not wait_for: in Python 3.11 it can drop stop()'s cancellation.
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                except TimeoutError:
                    pass
            else:
                await self._wake.wait()

    async def _dispatch(self, ready: list[_Batch]) -> None:
        if self.idempotent:
            ready = self._one_per_partition(ready)
            if self.txn.transactional and ready:
                try:
                    await self.txn.add_partitions(b.tp for b in ready)
                except KafkaClientError as exc:
                    self.txn.failed(exc)
                    for batch in ready:
                        self._fail(batch, exc)
                    return
        by_node: dict[int, list[_Batch]] = {}
        for batch in ready:
            leader = self.cluster.cached_leader(*batch.tp)
            if leader is None:
                try:
                    self._counts.pop(batch.tp.topic, None)
                    await self.partitions_for(batch.tp.topic)
                except KafkaClientError as exc:
                    self._fail(batch, exc)
                    continue
                leader = self.cluster.cached_leader(*batch.tp)
            if leader is None or leader < 0:
                self._retry_or_fail(batch, BrokerError(ErrorCode.LEADER_NOT_AVAILABLE,
                                                       f"produce to {batch.tp.topic}-"
                                                       f"{batch.tp.partition}"))
                continue
            by_node.setdefault(leader, []).append(batch)
        limit = int(self.settings["max.request.size"])
        for node, batches in by_node.items():
            sem = self._inflight.get(node)
            if sem is None:
                sem = self._inflight[node] = asyncio.Semaphore(
                    int(self.settings["max.in.flight.requests.per.connection"]))
            group: list[_Batch] = []
            size = 0
            for b in batches:
                # A second batch of a partition goes in the next request: one request
                # carries each partition once (its answer names partitions, not batches).
                if group and (size + b.size > limit or any(g.tp == b.tp for g in group)):
                    await sem.acquire()
                    self._spawn(self._produce(node, group, sem))
                    group, size = [], 0
                group.append(b)
                size += b.size
            if group:
                await sem.acquire()
                self._spawn(self._produce(node, group, sem))

    def _one_per_partition(self, ready: list[_Batch]) -> list[_Batch]:
        """Idempotence: a partition's batches go one at a time, in order; the others wait."""
        go = []
        for batch in ready:
            holder = self._busy.get(batch.tp)
            if holder is None:
                self._busy[batch.tp] = batch
                go.append(batch)
            elif holder is batch:
                go.append(batch)   # a retry of the batch in flight
            else:
                self._held.setdefault(batch.tp, collections.deque()).append(batch)
        return go

    def _release(self, batch: _Batch) -> None:
        """A partition's batch is done (stored or failed): let the next one go."""
        if self._busy.get(batch.tp) is not batch:
            return
        del self._busy[batch.tp]
        waiting = self._held.get(batch.tp)
        if waiting:
            self._ready.append(waiting.popleft())
            if not waiting:
                del self._held[batch.tp]
            self._wake.set()

    def _blob(self, batch: _Batch) -> bytes:
        if batch.blob is None and batch.encoded is not None:
            txn = self.txn
            batch.blob = frame_batch(
                batch.encoded, batch.count, batch.timestamp, batch.timestamp,
                compression=self.compression,
                producer_id=txn.producer_id if self.idempotent else -1,
                producer_epoch=txn.epoch if self.idempotent else -1,
                base_sequence=txn.next_sequence(batch.tp, batch.count) if self.idempotent else -1,
                transactional=txn.transactional)
        elif batch.blob is None:
            if self.idempotent:
                txn = self.txn
                batch.blob = build_batch(batch.records, compression=self.compression,
                                         producer_id=txn.producer_id, producer_epoch=txn.epoch,
                                         base_sequence=txn.next_sequence(batch.tp, len(batch.records)),
                                         transactional=txn.transactional)
            else:
                batch.blob = build_batch(batch.records, compression=self.compression)
        return batch.blob

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _produce(self, node: int, batches: list[_Batch], sem: asyncio.Semaphore) -> None:
        try:
            blobs = {b.tp: self._blob(b) for b in batches}
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for b in batches:
                by_topic.setdefault(b.tp.topic, []).append(
                    {"index": b.tp.partition, "records": blobs[b.tp]})

            def body(cls: type) -> Any:
                return build_request(cls, transactional_id=self.txn.transactional_id, acks=self.acks,
                                     timeout=int(self.settings["request.timeout.ms"]),
                                     topic_data=[{"name": t, "partition_data": ps}
                                                 for t, ps in by_topic.items()])

            try:
                conn = await self.cluster.node(node)
                resp = await self.cluster.request(conn, ApiKey.PRODUCE, body)
            except KafkaClientError as exc:
                for b in batches:
                    self._retry_or_fail(b, exc)
                return
            if resp is None:  # acks=0
                for b in batches:
                    self._complete(b, -1)
                return
            done: set[TopicPartition] = set()
            for t in resp.responses:
                for p in t.partition_responses:
                    tp = TopicPartition(t.name, int(p.index))
                    batch = next((b for b in batches if b.tp == tp), None)
                    if batch is None:
                        continue
                    done.add(tp)
                    code = int(p.error_code)
                    if code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                        self._complete(batch, -1)     # stored before; where is not said
                    elif code:
                        self._retry_or_fail(batch, BrokerError(code, f"produce to {tp.topic}-"
                                                               f"{tp.partition}"))
                    else:
                        self._complete(batch, int(p.base_offset))
            for b in batches:
                if b.tp not in done:
                    self._fail(b, KafkaClientError(f"no answer for {b.tp}"))
        finally:
            sem.release()

    def _complete(self, batch: _Batch, base: int) -> None:
        topic, partition = batch.tp
        if batch.encoded is not None:
            fut = batch.futures[0]
            if not fut.done():
                fut.set_result(BatchMetadata(topic, partition, base, batch.count, batch.timestamp))
            self._release(batch)
            self._settled(batch.count)
            return
        for i, (fut, rec) in enumerate(zip(batch.futures, batch.records)):
            if not fut.done():
                fut.set_result(RecordMetadata(topic, partition, base + i if base >= 0 else -1,
                                              rec[3]))
        self._release(batch)
        self._settled(len(batch.futures))

    def _retry_or_fail(self, batch: _Batch, exc: KafkaClientError) -> None:
        moved = self.cluster.recover(exc, partitions=[batch.tp]) is not Recovery.FAIL
        if moved and batch.attempts < int(self.settings["retries"]):
            batch.attempts += 1

            async def later() -> None:
                await asyncio.sleep(self.settings["retry.backoff.ms"] / 1000)
                self._ready.append(batch)
                self._wake.set()

            self._spawn(later())
            return
        self._fail(batch, exc)

    def _fail(self, batch: _Batch, exc: BaseException) -> None:
        if self.txn.transactional:
            self.txn.failed(exc)
        for fut in batch.futures:
            if not fut.done():
                fut.set_exception(exc)
        self._release(batch)
        self._settled(batch.count if batch.encoded is not None else len(batch.futures))

    def _settled(self, n: int) -> None:
        self._pending -= n
        if self._pending <= 0:
            self._pending = 0
            self._idle.set()
