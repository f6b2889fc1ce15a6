"""Record batches encoded from columns (the producer's bulk path) are the bytes the
per-record encoder builds, and kio reads back exactly the rows given: keys, values and
header values null or not, offset deltas past one varint byte."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch

from kgroup.wire.columnar import Column, encode_records, varint_sizes, zigzag
from kgroup.wire.record_batch import _headers_bytes, build_batch, frame_batch

_blob = st.one_of(st.none(), st.binary(max_size=300))
_headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=9))),
                    max_size=3)
_row = st.tuples(_blob, _blob, _headers)


def encode(rows: list, picked: list[int], ts: int = 1_700_000_000_000, **frame) -> bytes:
    keys, values, headers = zip(*rows)
    hcol = Column.of([_headers_bytes(h) if h else b"\x00" for h in headers]) \
        if any(headers) else None
    body = encode_records(np.array(picked, np.int64), Column.of(list(values)),
                          Column.of(list(keys)), hcol)
    return frame_batch(body, len(picked), ts, ts, **frame)


@settings(max_examples=150, deadline=None)
@given(st.lists(_row, min_size=1, max_size=40), st.randoms())
def test_columns_encode_the_batch_build_batch_does_and_kio_reads_the_rows_back(rows, rnd):
    picked = sorted(rnd.sample(range(len(rows)), rnd.randint(1, len(rows))))
    blob = encode(rows, picked, producer_id=7, producer_epoch=2, base_sequence=41)
    want = [rows[i] for i in picked]
    assert blob == build_batch([(k, v, h, 1_700_000_000_000) for k, v, h in want],
                               producer_id=7, producer_epoch=2, base_sequence=41)
    batch, size = read_batch(blob, 0)
    assert size == len(blob)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 2, 41)
    assert [(r.key, r.value, [(h.key.decode(), h.value) for h in r.headers], r.offset)
            for r in batch.records] == [(k, v, list(h), i) for i, (k, v, h) in enumerate(want)]


def test_a_batch_of_many_rows_has_multi_byte_offset_deltas_and_lengths():
    rows = [(b"k%d" % i, b"v" * (i % 200), []) for i in range(20_000)]
    blob = encode(rows, list(range(len(rows))))
    batch, _ = read_batch(blob, 0)
    assert [(r.key, r.value, r.offset) for r in batch.records] == \
        [(k, v, i) for i, (k, v, _) in enumerate(rows)]


def test_zigzag_varint_sizes_match_kafka_for_the_edges():
    values = np.array([0, -1, 1, 63, -64, 64, 8191, -8192, 8192, 2**31 - 1, -2**31], np.int64)
    assert varint_sizes(zigzag(values)).tolist() == [1, 1, 1, 1, 1, 2, 2, 2, 3, 5, 5]
