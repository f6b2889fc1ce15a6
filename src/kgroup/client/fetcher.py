"""The consumer's fetch pipeline: positions, Fetch requests ahead of the user, a buffer.

How this works: every assigned partition has a ``PartitionState`` with the user's position
(the next offset ``getmany`` returns) and a fetch offset that runs ahead of it. A background
task sends one Fetch per leader for every partition that is not paused, has a position, has
no Fetch in flight and fewer than ``_AHEAD`` undrained responses; the decoded records go into
a buffer that ``drain`` hands out. A seek or a (re)assignment bumps the partition's epoch, so
responses and buffered records of an older epoch are dropped; a partition no longer assigned
is never returned. Partitions without a position are resolved first by ``resolve`` (the
committed offset, else auto.offset.reset).

Transactions: control batches (end-of-transaction markers) are never handed out, but the
fetch offset moves past them, and so does the position once nothing before them is left to
hand out. With ``isolation.level=read_committed`` the broker answers only below the last
stable offset and names the aborted transactions in what it sent; the records of those are
dropped as the Java consumer drops them (a producer's transactional batches from the first
offset of its aborted transaction up to its abort marker).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import Any, NamedTuple

from kgroup.error_codes import ErrorCode
from kgroup.wire import record_batch
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.errors import CorruptRecord

from .cluster import ClusterClient, build_request
from .errors import KafkaClientError
from .records import ConsumerRecord, TopicPartition

_AHEAD = 2


@dataclass(slots=True)
class PartitionState:
    position: int | None = None
    fetch_offset: int | None = None
    epoch: int = 0
    paused: bool = False
    inflight: bool = False
    buffered: int = 0
    high_watermark: int = -1


class Fetcher:
    """Fetches assigned partitions ahead of the user; see the module comment."""

    def __init__(self, cluster: ClusterClient, settings: dict[str, Any],
                 resolve: Callable[[list[TopicPartition]], Awaitable[dict[TopicPartition, int]]]
                 ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.resolve = resolve
        self.states: dict[TopicPartition, PartitionState] = {}
        self._buffer: collections.deque[list[Any]] = collections.deque()
        self._wake = asyncio.Event()
        self._data = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.error: BaseException | None = None
        level = str(settings.get("isolation.level", "read_uncommitted")).lower()
        if level not in ("read_uncommitted", "read_committed"):
            raise ValueError(f"isolation.level must be read_uncommitted or read_committed, not {level!r}")
        self.isolation = 1 if level == "read_committed" else 0
        # What a response's records blob becomes in the buffer: a list of ConsumerRecord,
        # or what a reader puts here instead (``record_columns.read_as_columns``): anything
        # with len(), slices, ``[-1].offset`` and ``+``.
        self.decode: Callable[..., tuple[Any, int]] = decode

    def start(self) -> None:
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name="kgroup-fetcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._stopping = True
            self._task.cancel()
            self._wake.set()  # in case the cancellation was swallowed below us (see _run)
            # asyncio.wait, not wait_for: it neither raises the task's own CancelledError
            # (which would hide a cancellation of stop()'s caller) nor drops ours.
            await asyncio.wait([self._task], timeout=5)
            if self._task.done() and not self._task.cancelled():
                self._task.exception()   # retrieved: its failure was already reported

    # -- assignment and positions -----------------------------------------------------------

    def add(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            if tp not in self.states:
                self.states[tp] = PartitionState()
        self._wake.set()

    def remove(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.states.pop(tp, None)
        self._buffer = collections.deque(e for e in self._buffer if e[0] in self.states)

    def set_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = set(partitions)
        self.remove([tp for tp in self.states if tp not in wanted])
        self.add(sorted(wanted))

    def seek(self, tp: TopicPartition, offset: int | None) -> None:
        st = self.states.get(tp)
        if st is None:
            raise KafkaClientError(f"partition {tp.topic}-{tp.partition} is not assigned",
                                   "seek only partitions this consumer is assigned")
        st.epoch += 1
        st.position = offset
        st.fetch_offset = offset
        st.buffered = 0
        self._buffer = collections.deque(e for e in self._buffer if e[0] != tp)
        self._wake.set()

    def wake(self) -> None:
        """Look again at what can be fetched (a partition was resumed)."""
        self._wake.set()

    def interrupt(self) -> None:
        """Wake a ``wait`` now (the consumer has an error to raise)."""
        self._data.set()

    def positions(self) -> dict[TopicPartition, int]:
        return {tp: st.position for tp, st in self.states.items() if st.position is not None}

    # -- handing records out ----------------------------------------------------------------

    async def wait(self, timeout: float) -> None:
        if self._buffer or timeout <= 0:
            return
        self._data.clear()
        try:
            async with asyncio.timeout(timeout):   # not wait_for: it can drop a cancellation
                await self._data.wait()
        except TimeoutError:
            pass

    def drain(self, max_records: int) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Up to ``max_records`` buffered records of assigned, unpaused partitions."""
        out: dict[TopicPartition, list[ConsumerRecord]] = {}
        kept: list[list[Any]] = []
        left = max_records
        buf = self._buffer
        while buf and left > 0:
            entry = buf.popleft()
            tp, epoch, records, idx, after = entry
            st = self.states.get(tp)
            if st is None or st.epoch != epoch:
                continue
            if st.paused:
                kept.append(entry)
                continue
            end = idx + left
            finished = end >= len(records)
            if not finished:
                take = records[idx:end]
                entry[3] = end
                buf.appendleft(entry)
            else:
                take = records[idx:] if idx else records
                st.buffered -= 1
            if take:
                if tp in out:
                    out[tp] += take
                else:
                    out[tp] = take
                st.position = take[-1].offset + 1
                left -= len(take)
            if finished:
                # Past the markers (and aborted records) the fetch skipped after the last record.
                st.position = max(st.position, after)
        buf.extendleft(reversed(kept))
        self._wake.set()
        return out

    # -- the fetch loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except KafkaClientError:
                # A stop() can arrive as a KafkaClientError when closing connections fail the
                # request we were waiting on; the cancellation is then gone, so check the flag.
                if self._stopping:
                    return
                await asyncio.sleep(self.settings["retry.backoff.ms"] / 1000)
                continue
            except BaseException as exc:  # surfaced by the consumer's next poll
                self.error = exc
                self._data.set()
                return
            await self._wake.wait()

    async def _round(self) -> None:
        """Resolve missing positions, then send one Fetch per leader for what can go."""
        unknown = [tp for tp, st in self.states.items() if st.position is None]
        if unknown:
            epochs = {tp: self.states[tp].epoch for tp in unknown}
            found = await self.resolve(unknown)
            for tp, offset in found.items():
                st = self.states.get(tp)
                if st is not None and st.epoch == epochs[tp] and st.position is None:
                    st.position = st.fetch_offset = offset
        by_node: dict[int, list[TopicPartition]] = {}
        for tp, st in list(self.states.items()):
            if st.position is None or st.paused or st.inflight or st.buffered >= _AHEAD:
                continue
            leader = await self._leader(tp)
            by_node.setdefault(leader, []).append(tp)
        for node, tps in by_node.items():
            tps = [tp for tp in tps if tp in self.states]
            for tp in tps:
                self.states[tp].inflight = True
            asyncio.create_task(self._fetch(node, tps))

    async def _leader(self, tp: TopicPartition) -> int:
        leader = self.cluster.cached_leader(tp.topic, tp.partition)
        if leader is None:
            leader = await self.cluster.leader(tp.topic, tp.partition)
        return leader

    async def _fetch(self, node: int, tps: list[TopicPartition]) -> None:
        s = self.settings
        # A partition may have been revoked between scheduling this task and running it.
        tps = [tp for tp in tps if tp in self.states]
        if not tps:
            self._wake.set()
            return
        sent = {tp: (self.states[tp].epoch, self.states[tp].fetch_offset) for tp in tps}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(
                {"partition": tp.partition, "fetch_offset": sent[tp][1],
                 "partition_max_bytes": s["max.partition.fetch.bytes"],
                 "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1})
        max_wait = int(s["fetch.max.wait.ms"])

        def body(cls: type) -> Any:
            return build_request(cls, replica_id=-1, max_wait=max_wait,
                                 min_bytes=s["fetch.min.bytes"], max_bytes=s["fetch.max.bytes"],
                                 isolation_level=self.isolation, session_id=0, session_epoch=-1,
                                 topics=[{"topic": t, "partitions": ps}
                                         for t, ps in by_topic.items()],
                                 forgotten_topics_data=[], rack_id="")

        resp = None
        try:
            conn = await self.cluster.node(node)
            resp = await self.cluster.request(
                conn, ApiKey.FETCH, body, max_version=12,
                timeout=s["request.timeout.ms"] / 1000 + max_wait / 1000)
        except KafkaClientError:
            for tp in tps:   # route them again (the cluster also forgets a lost broker's)
                self.cluster.forget_leader(tp.topic, tp.partition)
            await asyncio.sleep(s["retry.backoff.ms"] / 1000)
        finally:
            for tp in tps:
                st = self.states.get(tp)
                if st is not None:
                    st.inflight = False
        if resp is not None:
            got = False
            for t in resp.responses:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, int(p.partition_index))
                    got |= self._partition_data(tp, sent.get(tp), p)
            if got:
                self._data.set()
        self._wake.set()

    def _partition_data(self, tp: TopicPartition, sent: tuple[int, int | None] | None,
                        p: Any) -> bool:
        st = self.states.get(tp)
        if st is None or sent is None or st.epoch != sent[0]:
            return False
        code = int(p.error_code)
        if code:
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                st.epoch += 1
                st.position = st.fetch_offset = None
            else:   # a moved leader, or an error the next fetch may not get: route again
                self.cluster.forget_leader(tp.topic, tp.partition)
            return False
        st.high_watermark = int(p.high_watermark)
        start = sent[1] or 0
        aborted = None
        if self.isolation:
            aborted = sorted((int(a.first_offset), int(a.producer_id)) for a in p.aborted_transactions or ())
        records, after = self.decode(tp, bytes(p.records or b""), start, aborted)
        if after <= start:
            return False
        st.fetch_offset = after
        st.buffered += 1
        self._buffer.append([tp, st.epoch, records, 0, after])
        return bool(records)


def decode(tp: TopicPartition, blob: bytes, start: int,
           aborted: list[tuple[int, int]] | None = None) -> tuple[list[ConsumerRecord], int]:
    """The records at or after ``start`` in a Fetch records blob, and the offset after its
    last whole batch (``start`` if there is none). Which batches are read: ``data_batches``.

    Records are read by ``_runs`` (whole runs of same-shaped records at once), else
    ``_records`` (one record at a time, building ``ConsumerRecord`` directly), falling back
    to ``record_batch.decode_records`` for anything neither expects.
    """
    out: list[ConsumerRecord] = []
    topic, partition = tp
    batches, after = data_batches(blob, start, aborted)
    for batch, payload in batches:
        decode_payload(out, batch, payload, topic, partition, start)
    return out, after


def data_batches(blob: bytes, start: int, aborted: list[tuple[int, int]] | None = None
                 ) -> tuple[list[tuple[record_batch.RecordBatch, bytes]], int]:
    """The batches of a Fetch records blob whose records a consumer hands out, each with its
    decompressed payload (the records after the header), and the offset after the blob's
    last whole batch (``start`` if there is none).

    Batches are framed and CRC-checked by ``record_batch.split_batches``. Control batches
    are skipped, and batches that end before ``start``; with ``aborted`` (read_committed:
    (first offset, producer id) of the aborted transactions the broker named, sorted) so
    are the batches of aborted transactions.
    """
    out: list[tuple[record_batch.RecordBatch, bytes]] = []
    after = start
    skipping: set[int] = set()
    for batch in record_batch.split_batches(record_batch.whole_batches(blob)):
        h = batch.header
        after = max(after, h.last_offset + 1)
        if aborted is not None and h.producer_id >= 0:
            # Producers whose aborted transaction started at or before this batch.
            while aborted and aborted[0][0] <= h.last_offset:
                skipping.add(aborted.pop(0)[1])
            if h.is_control:
                if h.producer_id in skipping:
                    marker = record_batch.read_marker(batch.data)
                    if marker is not None and marker[0] == record_batch.CONTROL_ABORT:
                        skipping.discard(h.producer_id)
                continue
            if h.is_transactional and h.producer_id in skipping:
                continue
        if h.is_control or h.last_offset < start:
            continue
        payload = batch.data[record_batch.BATCH_HEADER_SIZE:]
        if h.compression is not record_batch.Compression.NONE:
            payload = record_batch.decompress(h.compression, payload,
                                               record_batch.DEFAULT_MAX_UNCOMPRESSED)
        out.append((batch, payload))
    return out, after


def decode_payload(out: list[ConsumerRecord], batch: record_batch.RecordBatch, payload: bytes,
                   topic: str, partition: int, start: int) -> None:
    """Append the records at or after ``start`` of one batch (``payload``: its records,
    decompressed) to ``out``; see ``decode``."""
    h = batch.header
    ts_type = int(h.timestamp_type)
    try:
        if not _runs(out, payload, h, topic, partition, ts_type, start):
            _records(out, payload, h, topic, partition, ts_type, start)
    except MISFIT:
        for r in record_batch.decode_records(batch):
            if r.offset >= start:
                out.append(ConsumerRecord(topic, partition, r.offset, r.timestamp, ts_type,
                                          r.key, r.value, r.headers))


# A zigzag varint of any length (the record format's); the fast paths read short ones inline.
_varint = record_batch.read_varint
# What makes a fast path give up on a batch (decode() then reads it the general way).
MISFIT = (IndexError, ValueError, CorruptRecord)


def _records(out: list[ConsumerRecord], payload: bytes, h: Any, topic: str, partition: int,
             ts_type: int, start: int) -> None:
    """Append the records of one decompressed batch payload (see ``decode``)."""
    mark = len(out)
    pos = 0
    base_offset = h.base_offset
    base_ts = h.base_timestamp
    log_append = ts_type == 1
    append = out.append
    # Varints of one and two bytes are read inline: a record with a 100-byte value has
    # three two-byte varints, and calling _varint for them took a third of decode time.
    try:
        for _ in range(h.record_count):
            b = payload[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif payload[pos + 1] < 0x80:
                b = (b & 0x7F) | (payload[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = _varint(payload, pos)
            end = pos + length
            pos += 1  # attributes
            b = payload[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif payload[pos + 1] < 0x80:
                b = (b & 0x7F) | (payload[pos + 1] << 7)
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                ts_delta, pos = _varint(payload, pos)
            b = payload[pos]
            if b < 0x80:
                off_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif payload[pos + 1] < 0x80:
                b = (b & 0x7F) | (payload[pos + 1] << 7)
                off_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                off_delta, pos = _varint(payload, pos)
            b = payload[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif payload[pos + 1] < 0x80:
                b = (b & 0x7F) | (payload[pos + 1] << 7)
                n = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                n, pos = _varint(payload, pos)
            if n < 0:
                key = None
            else:
                key = payload[pos:pos + n]
                pos += n
            b = payload[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif payload[pos + 1] < 0x80:
                b = (b & 0x7F) | (payload[pos + 1] << 7)
                n = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                n, pos = _varint(payload, pos)
            if n < 0:
                value = None
            else:
                value = payload[pos:pos + n]
                pos += n
            if payload[pos] != 0:  # headers: leave them to the full decoder
                raise ValueError("headers")
            pos += 1
            if pos != end:
                raise ValueError("record length mismatch")
            offset = base_offset + off_delta
            if offset >= start:
                append(ConsumerRecord(topic, partition, offset,
                                      h.max_timestamp if log_append else base_ts + ts_delta,
                                      ts_type, key, value))
        if pos != len(payload):
            raise ValueError("bytes after the last record")
    except MISFIT:
        del out[mark:]
        raise


# -- runs of same-shaped records -------------------------------------------------------------
#
# A producer's batch is usually many records of one shape: the same key and value lengths, no
# headers. Such records differ only in their timestamp and offset deltas (varints), so while
# those deltas keep their encoded sizes the records sit at a fixed stride. ``_runs`` reads the
# first record of a run one field at a time, then checks the whole run column by column with
# C-level bytes operations (a stride slice ``seg[j::stride]`` holds byte j of every record)
# and decodes it with comprehensions: per record, Python only slices the value and builds the
# ConsumerRecord. A run is exactly the records of that shape: record 0 is parsed, and record
# k+1 starts where record k's length prefix says, which is what the stride check proves.

_HIGH = bytes(range(0x80, 0x100))
_ZIGZAG1 = [(b >> 1) ^ -(b & 1) for b in range(0x80)]
_MIN_RUN = 16   # shorter first runs: records vary, leave the batch to ``_records``


def offset_columns(hi: int, size: int) -> list[bytes]:
    """Byte columns of the varint offset deltas 0..hi-1 written in ``size`` bytes (meaningful
    only where that is their size), cached and grown to a power of two as batches need."""
    cols = _OFFSET_COLS.get(size)
    if cols is None or len(cols[0]) < hi:
        n = 1 << max(hi - 1, 1).bit_length()
        cols = []
        for j in range(size):
            shift = 7 * j
            if j < size - 1:
                cols.append(bytes(((2 * i >> shift) & 0x7F) | 0x80 for i in range(n)))
            else:
                cols.append(bytes(2 * i >> shift & 0xFF for i in range(n)))
        _OFFSET_COLS[size] = cols
    return cols


_OFFSET_COLS: dict[int, list[bytes]] = {}
_OFFSET_LIMIT = {1: 64, 2: 8192, 3: 1 << 20}


def _varint_size(buf: bytes, pos: int) -> int:
    n = 1
    while buf[pos] & 0x80:
        pos += 1
        n += 1
        if n > 3:
            raise ValueError("long varint")
    return n


class Run(NamedTuple):
    """Records ``index`` .. ``index + count - 1`` of a batch, of one shape, at a fixed
    ``stride`` from ``pos`` in the payload. Within each record: the key (``key_len`` bytes,
    -1: null) at ``key_at``, the value (``value_len`` bytes) at ``value_at``, the timestamp
    delta (a varint of ``ts_size``, 1 or 2, bytes) at ``ts_at``."""

    pos: int
    index: int
    count: int
    stride: int
    key_at: int
    key_len: int
    value_at: int
    value_len: int
    ts_at: int
    ts_size: int


def _runs(out: list[ConsumerRecord], payload: bytes, h: Any, topic: str, partition: int,
          ts_type: int, start: int) -> bool:
    """Append the records of one batch payload run by run; False (nothing appended) if the
    batch does not start with a long enough run of same-shaped records."""
    runs = run_layout(payload, h)
    if runs is None:
        return False
    base_offset = h.base_offset
    base_ts = h.base_timestamp
    log_append = ts_type == 1
    for run in runs:
        k, stride, ts_at = run.count, run.stride, run.ts_at
        seg = payload[run.pos:run.pos + k * stride]
        first = base_offset + run.index
        skip = start - first if start > first else 0
        if skip >= k:
            continue
        span = range(skip * stride, k * stride, stride)
        value_at, vlen = run.value_at, run.value_len
        values = [seg[q + value_at:q + value_at + vlen] for q in span]
        key_at, klen = run.key_at, run.key_len
        if klen < 0:
            keys: Any = repeat(None)
        else:
            keys = [seg[q + key_at:q + key_at + klen] for q in span]
        if log_append:
            stamps: Any = repeat(h.max_timestamp)
        elif run.ts_size == 1:
            stamps = [base_ts + _ZIGZAG1[b] for b in seg[ts_at + skip * stride::stride]]
        else:
            stamps = [base_ts + (((a & 0x7F) | (b << 7)) >> 1 ^ -(a & 1))
                      for a, b in zip(seg[ts_at + skip * stride::stride],
                                      seg[ts_at + 1 + skip * stride::stride])]
        out.extend(map(ConsumerRecord, repeat(topic), repeat(partition),
                       range(first + skip, first + k), stamps, repeat(ts_type), keys,
                       values))
    return True


class Shape(NamedTuple):
    """What every record of a run has in common with its first (offsets within a record):
    its ``stride``; the bytes that must be the same in each (the length prefix, the key's
    and value's length varints, the final header count, 0) at ``same``; the timestamp
    delta's varint of ``ts_size`` bytes at ``ts_at``; the offset delta's of ``off_size``
    bytes at ``off_at`` (equal to the record's index in the batch)."""

    stride: int
    same: tuple[int, ...]
    ts_at: int
    ts_size: int
    off_at: int
    off_size: int


def run_extent(payload: bytes, pos: int, index: int, limit: int, shape: Shape) -> int:
    """How many records from ``pos`` (the first, record ``index`` of its batch, parsed) up
    to ``limit`` have ``shape``: the longest prefix that fits, found by doubling then
    halving, each step checked with C-level bytes operations (a stride slice
    ``seg[j::stride]`` holds byte j of every record)."""
    stride, ts_at = shape.stride, shape.ts_at
    same = [(j, payload[pos + j]) for j in shape.same]

    def fits(k: int) -> bool:
        seg = payload[pos:pos + k * stride]
        for j, b in same:
            if seg[j::stride].count(b) != k:
                return False
        if shape.ts_size == 1:
            if not seg[ts_at::stride].isascii():
                return False
        elif seg[ts_at::stride].translate(None, _HIGH) or not seg[ts_at + 1::stride].isascii():
            return False
        cols = offset_columns(index + k, shape.off_size)
        for j in range(shape.off_size):
            if seg[shape.off_at + j::stride] != cols[j][index:index + k]:
                return False
        return True

    k = 1
    while k < limit and fits(min(2 * k, limit)):
        k = min(2 * k, limit)
    step = k // 2
    while step and k < limit:
        if k + step <= limit and fits(k + step):
            k += step
        step //= 2
    return k


def run_layout(payload: bytes, h: Any,
               extent: Callable[[bytes, int, int, int, Shape], int] = run_extent
               ) -> list[Run] | None:
    """The runs of same-shaped records that make up one batch payload, in order; None if
    the batch does not start with a long enough run. Raises one of ``MISFIT`` where a
    record fits no run (the batch is then read another way). ``extent`` measures a run
    (another way of checking the same, e.g. with numpy, may stand in for ``run_extent``)."""
    count = h.record_count
    runs: list[Run] = []
    pos = 0
    i = 0
    end = len(payload)
    while i < count:
        # The first record of the run, field by field: its shape and layout.
        ls = _varint_size(payload, pos)
        length, _ = _varint(payload, pos)
        stride = ls + length
        p = pos + ls + 1                  # past length and attributes
        kt = _varint_size(payload, p)
        if kt > 2:
            raise ValueError("timestamp delta of three bytes or more")
        p += kt
        ko = _varint_size(payload, p)
        off_delta, p = _varint(payload, p)
        if off_delta != i:
            raise ValueError("offset delta is not the record's index")
        key_at = p
        klen, p = _varint(payload, p)
        key_off = p - pos
        p += max(klen, 0)
        value_at = p
        vlen, p = _varint(payload, p)
        if vlen < 0:
            raise ValueError("null value")
        value_off = p - pos
        p += vlen
        if p + 1 - pos != stride or payload[p] != 0:
            raise ValueError("headers, or a length mismatch")
        # How far this shape can go: the offset delta keeps its size up to a limit.
        limit = min(count, _OFFSET_LIMIT[ko]) - i
        if limit * stride > end - pos:
            limit = (end - pos) // stride
        ts_at = ls + 1
        same = (*range(ls), *range(key_at - pos, key_off), *range(value_at - pos, value_off),
                stride - 1)
        k = extent(payload, pos, i, limit, Shape(stride, same, ts_at, kt, ts_at + kt, ko))
        if i == 0 and k < min(_MIN_RUN, count):
            return None
        runs.append(Run(pos, i, k, stride, key_off, klen, value_off, vlen, ts_at, kt))
        pos += k * stride
        i += k
    if pos != end:
        raise ValueError("bytes after the last record")
    return runs
