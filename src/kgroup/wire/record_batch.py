"""Record batch v2 (magic 2): split, validate, decode records, and build batches.

How this works: a Produce ``records`` blob is a concatenation of batches, each a header laid
out as kgroup/batch_layout.py describes (``batchLength`` counts the bytes after that field:
total size - 12) and then its records.
``split_batches`` checks the framing, magic and CRC of every batch without decompressing;
``validate_produce`` adds the rules Kafka applies to batches from clients; ``decode_records``
unpacks the records (uncompressed, gzip, and snappy/lz4/zstd through cramjam). The broker
stores batches as received and only rewrites baseOffset
(``set_base_offset``), which the CRC does not cover.
"""

from __future__ import annotations

import enum
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crc32c import crc32c

from kgroup.batch_layout import (
    ATTRIBUTES_AT,
    BASE_OFFSET,
    CONTROL_BIT,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LENGTH,
    LENGTH_AT,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_AT,
    TRANSACTIONAL_BIT,
    BatchExtent,
)

from .errors import CorruptRecord, InvalidRecord, UnsupportedCompression
from .record_walk import walk_records

__all__ = [
    "Compression",
    "TimestampType",
    "BatchHeader",
    "Record",
    "RecordBatch",
    "read_batch_header",
    "split_batches",
    "validate_produce",
    "decode_records",
    "build_batch",
    "frame_batch",
    "set_base_offset",
    "build_control_batch",
    "read_marker",
    "compression_available",
    "BATCH_HEADER_SIZE",
    "MAGIC",
]

BATCH_HEADER_SIZE = HEADER_SIZE

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_DELETE_HORIZON_BIT = 0x40

DEFAULT_MAX_UNCOMPRESSED = 256 * 1024 * 1024


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@dataclass(frozen=True, slots=True)
class BatchHeader(BatchExtent):
    """The fixed 61-byte header of a v2 record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> Compression:
        """The codec; raises InvalidRecord for an unknown codec id (5..7)."""
        codec = self.attributes & _COMPRESSION_MASK
        try:
            return Compression(codec)
        except ValueError:
            raise InvalidRecord(f"unknown compression codec id {codec}") from None

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes & _TIMESTAMP_TYPE_BIT) >> 3)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record, with absolute offset and timestamp resolved from its batch."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    offset_delta: int
    timestamp_delta: int
    attributes: int = 0


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A validated batch: its header and its exact bytes (header included)."""

    header: BatchHeader
    data: bytes


def whole_batches(blob: bytes) -> bytes:
    """The prefix of a Fetch records blob made of whole batches (a broker may end its
    answer in the middle of a batch, to be fetched again next time)."""
    pos = 0
    end = len(blob)
    while end - pos >= LOG_OVERHEAD:
        (length,) = LENGTH.unpack_from(blob, pos + LENGTH_AT)
        if length <= 0 or pos + LOG_OVERHEAD + length > end:
            break
        pos += LOG_OVERHEAD + length
    return blob[:pos]


def read_batch_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the 61-byte batch header at ``pos``; CorruptRecord if too short."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptRecord(
            f"record batch header needs {BATCH_HEADER_SIZE} bytes, {len(buf) - pos} left"
        )
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def split_batches(blob: bytes | bytearray | memoryview) -> list[RecordBatch]:
    """Split a records blob into batches, checking framing, magic and CRC of each.

    Raises CorruptRecord (size/CRC problems) or InvalidRecord (magic != 2).
    Does not decompress.
    """
    data = bytes(blob)
    batches: list[RecordBatch] = []
    pos = 0
    end = len(data)
    while pos < end:
        # 1. The size must be present and fit in what is left.
        if end - pos < LOG_OVERHEAD + 5:
            raise CorruptRecord(f"truncated record batch: {end - pos} bytes at {pos}")
        (batch_length,) = LENGTH.unpack_from(data, pos + LENGTH_AT)
        total = batch_length + LOG_OVERHEAD
        if total < BATCH_HEADER_SIZE:
            raise CorruptRecord(
                f"record batch length {batch_length} is smaller than a batch header"
            )
        magic = data[pos + MAGIC_AT]
        if magic != MAGIC:
            raise InvalidRecord(f"record batch magic {magic} at {pos}, only magic 2 is served")
        if total > end - pos:
            raise CorruptRecord(
                f"record batch length {batch_length} overruns the records blob "
                f"({end - pos - LOG_OVERHEAD} bytes left)"
            )
        # 2. CRC-32C over attributes..end.
        header = read_batch_header(data, pos)
        actual = crc32c(memoryview(data)[pos + CRC_START : pos + total])
        if actual != header.crc:
            raise CorruptRecord(
                f"record batch CRC mismatch: stored {header.crc:#010x}, computed {actual:#010x}"
            )
        batches.append(RecordBatch(header, data[pos : pos + total]))
        pos += total
    return batches


def validate_produce(
    blob: bytes | bytearray | memoryview | None,
) -> list[RecordBatch]:
    """Split and validate the records of one Produce partition, as Kafka does for clients.

    On top of ``split_batches`` (framing, magic, CRC): at least one batch; recordCount > 0;
    lastOffsetDelta == recordCount - 1; no control batches; a known codec. For an
    uncompressed batch the records are walked without being decoded: each record's length
    must fit, its offset delta must be its index, and exactly recordCount records must fill
    the batch. A compressed batch is not decompressed here: the CRC (checked above) covers
    the compressed bytes, so what we store is exactly what the client sent, and it is the
    consumer that decodes the records — Kafka itself relies on the CRC and the client for
    compressed payloads of this kind, and inflating every batch costs more than the rest of
    a produce together. Keys, values and headers inside a record are not checked either.
    """
    if blob is None or len(blob) == 0:
        raise InvalidRecord("produce request carries no record batch")
    batches = split_batches(blob)
    for batch in batches:
        h = batch.header
        count = h.record_count
        if count <= 0:
            raise InvalidRecord(f"record batch has record count {count}")
        if h.last_offset_delta != count - 1:
            raise InvalidRecord(
                f"inconsistent last offset delta {h.last_offset_delta} "
                f"for {count} records"
            )
        attributes = h.attributes
        if attributes & CONTROL_BIT:
            raise InvalidRecord("clients may not produce control batches")
        codec = attributes & _COMPRESSION_MASK
        if codec == 0:
            walk_records(batch.data, count)
        elif codec > 4:
            raise InvalidRecord(f"unknown compression codec id {codec}")
    return batches


# --- varints --------------------------------------------------------------------------


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint at ``pos`` -> (value, new pos). CorruptRecord on overrun."""
    shift = 0
    raw = 0
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise CorruptRecord("truncated varint in record") from None
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecord("varint longer than 10 bytes in record")


def _write_varint(out: bytearray, value: int) -> None:
    raw = (value << 1) ^ (value >> 63)
    raw &= 0xFFFFFFFFFFFFFFFF
    while raw > 0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    _write_varint(out, value)
    return bytes(out)


# The zigzag varints of 0..16383, looked up instead of computed: a record's offset delta,
# timestamp delta and lengths are almost always in this range, and building a batch is
# then a handful of table lookups and joins per record (the producer's hot path).
_SMALL = 1 << 14
_ZIGZAG = tuple(_varint_bytes(v) for v in range(_SMALL))


def _varint(value: int) -> bytes:
    return _ZIGZAG[value] if 0 <= value < _SMALL else _varint_bytes(value)


def _headers_bytes(headers: Sequence[tuple[str | bytes, bytes | None]]) -> bytes:
    out = bytearray(_varint(len(headers)))
    for hkey, hval in headers:
        kb = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        out += _varint(len(kb))
        out += kb
        if hval is None:
            out += b"\x01"                  # -1: a null value
        else:
            out += _varint(len(hval))
            out += hval
    return bytes(out)


# What a record carries after its value, for encoders outside this module (the producer's
# bulk path encodes each row's headers with it).
headers_bytes = _headers_bytes


def _read_bytes(buf: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        if length != -1:
            raise CorruptRecord(f"negative {what} length {length}")
        return None, pos
    if pos + length > end:
        raise CorruptRecord(f"{what} of {length} bytes overruns its record")
    return buf[pos : pos + length], pos + length


# --- compression ----------------------------------------------------------------------


def _optional_module(name: str) -> object | None:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


def compression_available(codec: Compression) -> bool:
    """Whether records with this codec can be decoded/built here."""
    if codec in (Compression.NONE, Compression.GZIP):
        return True
    return _optional_module("cramjam") is not None


def _gunzip(data: bytes, limit: int) -> bytes:
    out: list[bytes] = []
    size = 0
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            chunk = d.decompress(data, limit - size + 1)
            out.append(chunk)
            size += len(chunk)
            if size > limit:
                raise CorruptRecord(f"gzip batch inflates past {limit} bytes")
            if d.eof or not d.unconsumed_tail:
                break
            data = d.unconsumed_tail
        if not d.eof:
            raise CorruptRecord("truncated gzip data in record batch")
        data = d.unused_data
    return b"".join(out)


# Kafka's Java client writes snappy in xerial framing: this 16-byte header (magic, version 1,
# compatible version 1), then blocks of int32 length + raw snappy, each of at most 32 KiB
# uncompressed. librdkafka and others write raw snappy; both are read.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024


def _unsnappy(data: bytes) -> bytes:
    import cramjam

    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = 16
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecord("truncated xerial snappy block length")
        (n,) = struct.unpack_from(">i", data, pos)
        if n < 0 or pos + 4 + n > len(data):
            raise CorruptRecord("xerial snappy block overruns the batch")
        out += bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return bytes(out)


def _snappy(data: bytes) -> bytes:
    import cramjam

    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for pos in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[pos : pos + _XERIAL_BLOCK]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def decompress(codec: Compression, data: bytes, limit: int) -> bytes:
    """A batch's records payload uncompressed (CorruptRecord past ``limit`` bytes)."""
    if codec is Compression.GZIP:
        try:
            return _gunzip(data, limit)
        except zlib.error as exc:
            raise CorruptRecord(f"bad gzip data in record batch: {exc}") from exc
    if not compression_available(codec):
        raise UnsupportedCompression(
            f"{codec.name.lower()} compression is not supported here "
            f"(its Python library, cramjam, is not installed)"
        )
    try:
        import cramjam

        if codec is Compression.SNAPPY:
            out = _unsnappy(data)
        elif codec is Compression.LZ4:
            out = bytes(cramjam.lz4.decompress(data))  # LZ4 frame format
        else:
            out = bytes(cramjam.zstd.decompress(data))
    except (UnsupportedCompression, CorruptRecord):
        raise
    except Exception as exc:
        raise CorruptRecord(f"bad {codec.name.lower()} data in record batch: {exc}") from exc
    if len(out) > limit:
        raise CorruptRecord(f"{codec.name.lower()} batch inflates past {limit} bytes")
    return out


def _compress(codec: Compression, data: bytes) -> bytes:
    if codec is Compression.NONE:
        return data
    if codec is Compression.GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if not compression_available(codec):
        raise UnsupportedCompression(
            f"{codec.name.lower()} compression needs cramjam, which is not installed"
        )
    import cramjam

    if codec is Compression.SNAPPY:
        return _snappy(data)
    if codec is Compression.LZ4:
        return bytes(cramjam.lz4.compress(data))
    return bytes(cramjam.zstd.compress(data))


# --- records --------------------------------------------------------------------------


def decode_records(
    batch: RecordBatch | bytes, *, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
) -> list[Record]:
    """Decode every record of one batch (uncompressed, gzip, or an importable codec).

    Raises CorruptRecord for malformed records, InvalidRecord if the count is wrong,
    UnsupportedCompression if the codec's library is missing.
    """
    if not isinstance(batch, RecordBatch):
        (batch,) = split_batches(batch)
    h = batch.header
    payload = batch.data[BATCH_HEADER_SIZE:]
    codec = h.compression
    if codec is not Compression.NONE:
        payload = decompress(codec, payload, max_uncompressed)
    log_append = h.timestamp_type is TimestampType.LOG_APPEND_TIME
    records: list[Record] = []
    pos = 0
    end = len(payload)
    if h.record_count < 0:
        raise InvalidRecord(f"negative record count {h.record_count}")
    for i in range(h.record_count):
        if pos >= end:
            raise InvalidRecord(f"batch declares {h.record_count} records but holds {i}")
        length, pos = read_varint(payload, pos)
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise CorruptRecord(f"record {i} length {length} overruns the batch")
        attributes = payload[pos] if pos < rec_end else 0
        pos += 1
        ts_delta, pos = read_varint(payload, pos)
        off_delta, pos = read_varint(payload, pos)
        key, pos = _read_bytes(payload, pos, rec_end, "key")
        value, pos = _read_bytes(payload, pos, rec_end, "value")
        n_headers, pos = read_varint(payload, pos)
        if n_headers < 0 or n_headers > length:
            raise CorruptRecord(f"record {i} has {n_headers} headers")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(n_headers):
            hkey, pos = _read_bytes(payload, pos, rec_end, "header key")
            if hkey is None:
                raise CorruptRecord("null header key")
            hval, pos = _read_bytes(payload, pos, rec_end, "header value")
            try:
                headers.append((hkey.decode("utf-8"), hval))
            except UnicodeDecodeError as exc:
                raise CorruptRecord(f"header key is not UTF-8: {exc}") from exc
        if pos != rec_end:
            raise CorruptRecord(
                f"record {i} declares {length} bytes but its fields use {length + pos - rec_end}"
            )
        records.append(
            Record(
                offset=h.base_offset + off_delta,
                timestamp=h.max_timestamp if log_append else h.base_timestamp + ts_delta,
                key=key,
                value=value,
                headers=tuple(headers),
                offset_delta=off_delta,
                timestamp_delta=ts_delta,
                attributes=attributes,
            )
        )
    if pos != end:
        raise InvalidRecord(f"{end - pos} bytes after the last of {h.record_count} records")
    return records


RecordInput = tuple[
    bytes | None, bytes | None, Sequence[tuple[str | bytes, bytes | None]], int
]


def build_batch(
    records: Sequence[RecordInput] | Iterable[RecordInput],
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    transactional: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    control: bool = False,
) -> bytes:
    """Build one v2 batch from ``(key, value, headers, timestamp_ms)`` tuples, CRC set.

    Offsets are base_offset + index; baseTimestamp is the first record's timestamp and
    maxTimestamp the largest. Raises ValueError for an empty list.
    """
    items = list(records)
    if not items:
        raise ValueError("a record batch needs at least one record")
    base_ts = items[0][3]
    max_ts = max(r[3] for r in items)
    body = bytearray()
    zigzag, small, varint = _ZIGZAG, _SMALL, _varint
    for i, (key, value, headers, ts) in enumerate(items):
        delta = ts - base_ts
        # attributes (0), timestamp delta, offset delta; then key, value (-1: null), headers
        head = b"\x00" + (zigzag[delta] if 0 <= delta < small else varint(delta)) + \
            (zigzag[i] if i < small else varint(i))
        k = b"\x01" if key is None else varint(len(key)) + key
        v = b"\x01" if value is None else varint(len(value)) + value
        h = _headers_bytes(headers) if headers else b"\x00"
        body += varint(len(head) + len(k) + len(v) + len(h))
        body += head
        body += k
        body += v
        body += h
    return frame_batch(bytes(body), len(items), base_ts, max_ts, base_offset, compression,
                       producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=base_sequence,
                       partition_leader_epoch=partition_leader_epoch,
                       transactional=transactional, timestamp_type=timestamp_type,
                       control=control)


def frame_batch(
    records: bytes,
    count: int,
    base_ts: int,
    max_ts: int,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    transactional: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    control: bool = False,
) -> bytes:
    """One v2 batch around ``count`` records already encoded (``records``, uncompressed):
    compress them, lay out the header, set the CRC. ``build_batch`` encodes the records
    one by one; the producer's bulk path (kgroup/wire/columnar.py) from columns."""
    payload = _compress(compression, records)
    attributes = int(compression) | (int(timestamp_type) << 3)
    if transactional:
        attributes |= TRANSACTIONAL_BIT
    if control:
        attributes |= CONTROL_BIT
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            count - 1,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
        + payload
    )
    batch_length = len(after_crc) + 9  # partitionLeaderEpoch + magic + crc
    return (
        struct.pack(
            ">qiibI", base_offset, batch_length, partition_leader_epoch, MAGIC, crc32c(after_crc)
        )
        + after_crc
    )


# Control records (KIP-98): the key is int16 version 0 + int16 type; an end-of-transaction
# marker's value is int16 version 0 + int32 coordinator epoch.
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


def build_control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                        timestamp_ms: int) -> bytes:
    """An end-of-transaction marker: a control batch of one COMMIT or ABORT record."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return build_batch([(key, value, (), timestamp_ms)], producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=-1, transactional=True, control=True)


def read_marker(batch: bytes | memoryview) -> tuple[int, int] | None:
    """(control type, coordinator epoch) of an uncompressed control batch, read from its
    first record (the epoch is -1 if the bytes end before it); None if the bytes do not show
    a control record. `batch` may be only the start of the batch."""
    data = bytes(batch)
    if len(data) < BATCH_HEADER_SIZE or not data[ATTRIBUTES_AT + 1] & CONTROL_BIT:   # the low byte
        return None
    try:
        pos = BATCH_HEADER_SIZE
        _, pos = read_varint(data, pos)      # record length
        pos += 1                              # attributes
        _, pos = read_varint(data, pos)      # timestamp delta
        _, pos = read_varint(data, pos)      # offset delta
        key_len, pos = read_varint(data, pos)
        if key_len < 4 or pos + 4 > len(data):
            return None
        kind = _CONTROL_KEY.unpack_from(data, pos)[1]
        pos += key_len
        value_len, pos = read_varint(data, pos)
        epoch = -1
        if value_len >= 6 and pos + 6 <= len(data):
            epoch = _MARKER_VALUE.unpack_from(data, pos)[1]
        return kind, epoch
    except CorruptRecord:
        return None


def set_base_offset(batch: bytes | bytearray | memoryview, base_offset: int) -> bytes:
    """The same batch with baseOffset replaced (not covered by the CRC)."""
    return BASE_OFFSET.pack(base_offset) + bytes(batch[BASE_OFFSET.size:])
