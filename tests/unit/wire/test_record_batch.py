"""Record batch v2: our builder read by kafka-python/aiokafka, theirs read by us, validation."""

from __future__ import annotations

import struct
import warnings

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

warnings.filterwarnings("ignore", category=DeprecationWarning)

from aiokafka.record.default_records import DefaultRecordBatch as AioBatch  # noqa: E402
from kafka.record.default_records import (  # noqa: E402
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)

from kgroup.wire.errors import (  # noqa: E402
    CorruptRecord,
    InvalidRecord,
    RecordError,
    UnsupportedCompression,
)
from kgroup.wire.record_batch import (  # noqa: E402
    BATCH_HEADER_SIZE,
    Compression,
    TimestampType,
    build_batch,
    compression_available,
    decode_records,
    read_batch_header,
    set_base_offset,
    split_batches,
    validate_produce,
)

RECORDS = [
    (b"k1", b"v1", [("h1", b"x"), ("h2", None)], 1_700_000_000_000),
    (None, b"v2", [], 1_700_000_000_005),
    (b"k3", None, [("ü", b"")], 1_699_999_999_990),
]

headers_st = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3)
record_st = st.tuples(
    st.none() | st.binary(max_size=40),
    st.none() | st.binary(max_size=200),
    headers_st,
    st.integers(min_value=0, max_value=2**41),
)


def _kp_records(blob: bytes) -> list[tuple]:
    batch = DefaultRecordBatch(blob)
    assert batch.validate_crc()
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_our_batch_read_by_kafka_python_and_aiokafka(compression: Compression) -> None:
    blob = build_batch(RECORDS, base_offset=100, compression=compression,
                       producer_id=7, producer_epoch=1, base_sequence=0)
    expected = [(100 + i, ts, k, v, [(hk, hv) for hk, hv in h]) for i, (k, v, h, ts) in enumerate(RECORDS)]
    assert _kp_records(blob) == expected

    aio = AioBatch(blob)
    assert aio.validate_crc()
    assert (aio.base_offset, aio.producer_id, aio.producer_epoch, aio.base_sequence) == (100, 7, 1, 0)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in aio] == [e[:4] for e in expected]

    h = read_batch_header(blob)
    assert h.compression is compression and h.record_count == 3 and h.last_offset_delta == 2
    assert h.base_timestamp == RECORDS[0][3] and h.max_timestamp == RECORDS[1][3]
    assert h.size == len(blob) and h.last_offset == 102


@settings(max_examples=100, deadline=None)
@given(records=st.lists(record_st, min_size=1, max_size=6), base=st.integers(0, 2**40),
       gzip=st.booleans())
def test_build_decode_round_trip(records, base: int, gzip: bool) -> None:
    codec = Compression.GZIP if gzip else Compression.NONE
    blob = build_batch(records, base_offset=base, compression=codec)
    (batch,) = validate_produce(blob)
    decoded = decode_records(batch)
    assert [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in decoded] == [
        (base + i, k, v, [(hk, hv) for hk, hv in h], ts) for i, (k, v, h, ts) in enumerate(records)
    ]
    assert _kp_records(blob) == [(base + i, ts, k, v, [(hk, hv) for hk, hv in h])
                                 for i, (k, v, h, ts) in enumerate(records)]


@pytest.mark.parametrize("codec", [DefaultRecordBatchBuilder.CODEC_NONE, DefaultRecordBatchBuilder.CODEC_GZIP])
@pytest.mark.parametrize("transactional", [False, True])
def test_kafka_python_batch_read_by_us(codec: int, transactional: bool) -> None:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=9 if transactional else -1,
                                  producer_epoch=2 if transactional else -1,
                                  base_sequence=5 if transactional else -1, batch_size=1 << 20)
    for i in range(5):
        b.append(i, timestamp=1_600_000_000_000 + i, key=None if i == 2 else b"k%d" % i,
                 value=b"v" * i, headers=[("trace", b"%d" % i)])
    blob = bytes(b.build())
    (batch,) = validate_produce(blob)
    h = batch.header
    assert h.is_transactional is transactional and not h.is_control
    assert h.compression == codec and h.timestamp_type is TimestampType.CREATE_TIME
    assert h.producer_id == (9 if transactional else -1)
    recs = decode_records(batch)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (i, 1_600_000_000_000 + i, None if i == 2 else b"k%d" % i, b"v" * i, (("trace", b"%d" % i),))
        for i in range(5)
    ]


def test_several_batches_and_set_base_offset() -> None:
    a = build_batch(RECORDS[:1])
    b = build_batch(RECORDS[1:], base_offset=1)
    batches = split_batches(a + b)
    assert [x.header.record_count for x in batches] == [1, 2]
    moved = set_base_offset(b, 5000)
    (m,) = split_batches(moved)  # CRC still valid
    assert m.header.base_offset == 5000
    assert [r.offset for r in decode_records(m)] == [5000, 5001]
    assert _kp_records(moved)[0][0] == 5000


def test_log_append_time_uses_max_timestamp() -> None:
    blob = build_batch(RECORDS, timestamp_type=TimestampType.LOG_APPEND_TIME)
    assert {r.timestamp for r in decode_records(blob)} == {RECORDS[1][3]}


def _recrc(blob: bytes) -> bytes:
    return blob[:17] + struct.pack(">I", crc32c(blob[21:])) + blob[21:]


def test_crc_mismatch_is_corrupt() -> None:
    blob = bytearray(build_batch(RECORDS))
    blob[-1] ^= 0xFF
    with pytest.raises(CorruptRecord, match="CRC"):
        split_batches(bytes(blob))


def test_wrong_magic_is_invalid() -> None:
    blob = bytearray(build_batch(RECORDS))
    blob[16] = 1
    with pytest.raises(InvalidRecord, match="magic"):
        split_batches(bytes(blob))


def test_length_problems_are_corrupt() -> None:
    blob = build_batch(RECORDS)
    with pytest.raises(CorruptRecord):
        split_batches(blob[:-1])
    with pytest.raises(CorruptRecord):
        split_batches(blob + b"\x00\x00\x00")
    small = blob[:8] + struct.pack(">i", 10) + blob[12:]
    with pytest.raises(CorruptRecord):
        split_batches(small)


def test_produce_rules() -> None:
    with pytest.raises(InvalidRecord):
        validate_produce(b"")
    with pytest.raises(InvalidRecord):
        validate_produce(None)
    blob = build_batch(RECORDS)
    # record count 0
    zero = _recrc(blob[:57] + struct.pack(">i", 0) + blob[61:])
    with pytest.raises(InvalidRecord, match="record count"):
        validate_produce(zero)
    # lastOffsetDelta inconsistent with the count
    lod = _recrc(blob[:23] + struct.pack(">i", 7) + blob[27:])
    with pytest.raises(InvalidRecord, match="last offset delta"):
        validate_produce(lod)
    # control batch
    ctl = _recrc(blob[:21] + struct.pack(">h", 0x20) + blob[23:])
    with pytest.raises(InvalidRecord, match="control"):
        validate_produce(ctl)
    # unknown codec 6
    bad_codec = _recrc(blob[:21] + struct.pack(">h", 6) + blob[23:])
    with pytest.raises(InvalidRecord, match="codec"):
        validate_produce(bad_codec)
    # record count larger than the records present
    more = _recrc(blob[:23] + struct.pack(">i", 3) + blob[27:57] + struct.pack(">i", 4) + blob[61:])
    with pytest.raises(InvalidRecord):
        validate_produce(more)


def test_unknown_codec_is_refused_clearly() -> None:
    # Codec ids 5-7 do not exist; Kafka refuses them, and so do we, before storing anything.
    blob = build_batch(RECORDS)
    unknown = _recrc(blob[:21] + struct.pack(">h", 5) + blob[23:])
    with pytest.raises((InvalidRecord, UnsupportedCompression)):
        validate_produce(unknown)
    assert UnsupportedCompression.error_code == 76


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_every_kafka_codec_round_trips(codec) -> None:
    assert compression_available(codec)
    (batch,) = validate_produce(build_batch(RECORDS, compression=codec))
    assert [(r.key, r.value) for r in decode_records(batch)] == [(k, v) for k, v, *_ in RECORDS]


def test_empty_build_is_refused() -> None:
    with pytest.raises(ValueError):
        build_batch([])


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_mutated_batches_raise_only_record_errors(data) -> None:
    blob = bytearray(build_batch(RECORDS, compression=data.draw(st.sampled_from([Compression.NONE, Compression.GZIP]))))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(blob)))
    mutated = bytes(blob[:cut])
    if data.draw(st.booleans()) and len(mutated) >= BATCH_HEADER_SIZE:
        mutated = _recrc(mutated)  # get past the CRC to reach the record parser
    try:
        for batch in validate_produce(mutated):
            decode_records(batch)
    except RecordError:
        pass
