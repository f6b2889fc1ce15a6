"""The Spark source's decode, in-process (no Spark, no broker): Fetch blobs to Arrow batches.

    .venv/bin/python bench/spark_decode.py --runs 5

Builds the record batches a producer writes for ``--records`` records of ``--value-bytes``
values with 8-byte keys (16 KB batches, timestamps rising a millisecond every 50 records;
``--codec`` compresses them), cut into Fetch answers of 4 MB as the source's consumer asks
for, and turns them into the source's Arrow record batches of 20,000 rows two ways, run
after run alternately:

- per record: ``fetcher.decode`` (a ``ConsumerRecord`` per record) then
  ``schema.records_to_arrow`` (the source's path before the columnar decode);
- columnar: ``record_columns.decode_columns`` then ``schema.columns_to_arrow`` (now).

Prints the median CPU seconds of each (this process's: on a shared machine wall time
mostly measures the neighbours) and the median of the per-run ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from kgroup.client.fetcher import decode
from kgroup.client.record_columns import decode_columns
from kgroup.client.records import TopicPartition
from kgroup.spark.schema import arrow_schema, columns_to_arrow, records_to_arrow
from kgroup.wire.record_batch import Compression, build_batch

_FETCH = 4 << 20
_BATCH_BYTES = 16_384
_ROWS = 20_000


def fetch_blobs(records: int, value_bytes: int, codec: Compression) -> list[tuple[int, bytes]]:
    """(first offset, blob) of Fetch answers holding ``records`` producer-shaped records."""
    per_batch = max(1, _BATCH_BYTES // (value_bytes + 8 + 8))
    blobs: list[tuple[int, bytes]] = []
    parts: list[bytes] = []
    size = 0
    first = 0
    for base in range(0, records, per_batch):
        n = min(per_batch, records - base)
        batch = build_batch([(b"%08d" % (base + i), bytes([(base + i) % 251]) * value_bytes, (),
                              1_700_000_000_000 + (base + i) // 50) for i in range(n)],
                            base_offset=base, compression=codec)
        if size + len(batch) > _FETCH and parts:
            blobs.append((first, b"".join(parts)))
            parts, size, first = [], 0, base
        parts.append(batch)
        size += len(batch)
    blobs.append((first, b"".join(parts)))
    return blobs


def to_arrow(blobs: list[tuple[int, bytes]], tp: TopicPartition, decoder: Any,
             batch: Any) -> int:
    """Rows of the Arrow batches made of ``blobs`` by ``decoder`` then ``batch``."""
    rows = 0
    for start, blob in blobs:
        records, _ = decoder(tp, blob, start)
        for i in range(0, len(records), _ROWS):
            rows += batch(records[i:i + _ROWS], tp.topic, tp.partition).num_rows
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--codec", default="none", choices=[c.name.lower() for c in Compression])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tp = TopicPartition("bench", 0)
    blobs = fetch_blobs(args.records, args.value_bytes, Compression[args.codec.upper()])
    arrow_schema()   # pyspark's schema conversion, once, outside the timing
    ways = {"per record": (decode, records_to_arrow), "columnar": (decode_columns, columns_to_arrow)}
    times: dict[str, list[float]] = {w: [] for w in ways}
    for run in range(args.runs + 1):   # run 0 warms up, unmeasured
        for name in (list(ways) if run % 2 else list(reversed(ways))):
            t = time.process_time()
            rows = to_arrow(blobs, tp, *ways[name])
            took = time.process_time() - t
            assert rows == args.records, (name, rows)
            if run:
                times[name].append(took)
    for name, ts in times.items():
        print(f"{name:10s}: median {statistics.median(ts):.3f} CPU s for {args.records:,} records "
              f"({args.records / statistics.median(ts):,.0f} records/s)")
    ratios = [a / b for a, b in zip(times["per record"], times["columnar"])]
    print(f"per record / columnar: median {statistics.median(ratios):.2f}x "
          f"(runs {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
