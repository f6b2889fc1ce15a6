"""The run walk of uncompressed records gives exactly the verdict of the record-by-record walk."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.wire import RecordError
from kgroup.wire.record_batch import build_batch, read_batch_header
from kgroup.wire.record_walk import walk_exact, walk_records


def _verdict(walk, data: bytes, count: int) -> tuple[str, str] | None:
    try:
        walk(data, count)
    except RecordError as exc:
        return type(exc).__name__, str(exc)
    return None


def _same(data: bytes, count: int) -> tuple[str, str] | None:
    expected = _verdict(walk_exact, data, count)
    assert _verdict(walk_records, data, count) == expected
    return expected


def _batch(n: int, value: int = 100, ts_step: int = 0, key: bytes | None = None) -> bytes:
    return build_batch([(key, b"v" * value, [], 1_000 + i * ts_step) for i in range(n)])


@pytest.mark.parametrize("n", [1, 3, 4, 5, 63, 64, 65, 200, 8191, 8192, 8200])
def test_producer_shaped_batches_are_accepted(n):
    data = _batch(n, ts_step=1)
    assert _same(data, read_batch_header(data).record_count) is None


def test_a_run_spans_timestamp_deltas_of_changing_size():
    data = _batch(300, ts_step=3)          # deltas cross 64 and 8192 ms: varints grow
    assert _same(data, 300) is None


@pytest.mark.parametrize("n", [70, 9000])
def test_every_single_byte_change_in_the_records_gets_the_exact_verdict(n):
    data = bytearray(_batch(n, value=3, ts_step=1))
    size = len(data)
    rejected = 0
    positions = range(61, size, max(1, (size - 61) // 400))
    for pos in positions:
        for value in (0x00, 0x01, 0x7F, 0x80, 0xFF, data[pos] ^ 0x02):
            mutated = bytearray(data)
            mutated[pos] = value
            rejected += _same(bytes(mutated), n) is not None
    assert rejected > 0


def test_wrong_count_and_trailing_bytes():
    data = _batch(100)
    assert _same(data, 99)[0] == "InvalidRecord"
    assert _same(data, 101)[0] == "InvalidRecord"
    assert _same(data + b"\x00", 100)[0] == "InvalidRecord"
    assert _same(data[:-1], 100) is not None


def test_a_valid_but_longer_offset_delta_encoding_is_accepted_as_the_exact_walk_does():
    # Record 10's offset delta written as a 2-byte varint (0x94 0x00 = 20 = zigzag(10)),
    # its length one more: the exact walk accepts it, so must the run walk.
    records = []
    for i in range(20):
        body = b"\x00\x00" + (b"\x94\x00" if i == 10 else bytes([2 * i])) + b"\x01" + b"\x06abc\x00"
        records.append(bytes([2 * len(body)]) + body)
    data = bytes(61) + b"".join(records)
    assert _same(data, 20) is None


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 200), min_size=1, max_size=300),
    same=st.booleans(),
    ts_step=st.sampled_from([0, 1, 70]),
    key=st.one_of(st.none(), st.binary(max_size=3)),
    edits=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), max_size=3),
    cut=st.integers(0, 3),
    count_shift=st.sampled_from([0, 0, 0, -1, 1]),
)
def test_run_walk_matches_exact_walk(sizes, same, ts_step, key, edits, cut, count_shift):
    values = [b"x" * (sizes[0] if same else s) for s in sizes]
    data = bytearray(build_batch([(key, v, [], 1_000 + i * ts_step) for i, v in enumerate(values)]))
    for pos, value in edits:
        data[61 + pos % (len(data) - 61)] = value
    blob = bytes(data[:len(data) - cut])
    _same(blob, max(1, len(values) + count_shift))


def test_offset_delta_columns_are_the_varints_of_each_index():
    from kgroup.wire.record_walk import _CLASSES, _offset_delta_bytes

    for size, (lo, hi) in enumerate(_CLASSES, start=1):
        for k in range(size):
            flag = 0x80 if k < size - 1 else 0
            assert _offset_delta_bytes(size, k) == bytes(((2 * i) >> (7 * k)) & 0x7F | flag for i in range(lo, hi))
