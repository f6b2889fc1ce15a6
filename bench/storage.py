"""Storage benchmarks: append, group-commit fsync, replay. Prints medians of 3 runs.

    .venv/bin/python bench/storage.py [--dir /path/on/the/disk/to/test] [--records 1000000]

- appends/s: RecordLog.append of 100-byte payloads, buffered, plus the final flush.
- sync'd appends/s: 100 appends then one sync() (fsync) — group commit of 100 per fsync.
- open (recovery scan) and replay of N small framed records: RecordLog open (CRC-checks
  every frame) and read_from(0) (reads and CRC-checks again), records/s each.
- partition log: append of 1 KiB v2 batches (offset rewrite), MB/s; read of all of it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kgroup.storage.partition_log import PartitionLog  # noqa: E402
from kgroup.storage.record_log import RecordLog  # noqa: E402
from kgroup.storage.recovery_point import RECOVERY_POINT_FILE  # noqa: E402


def fresh(base: Path, name: str) -> Path:
    d = base / name
    shutil.rmtree(d, ignore_errors=True)
    return d


def bench_appends(base: Path, n: int) -> float:
    log = RecordLog(fresh(base, "appends"))
    payload = b"p" * 100
    t = time.perf_counter()
    for _ in range(n):
        log.append(payload)
    log.flush()
    dt = time.perf_counter() - t
    log.close()
    return n / dt


def bench_synced(base: Path, n: int, group: int = 100) -> tuple[float, float]:
    log = RecordLog(fresh(base, "synced"))
    payload = b"p" * 100
    t = time.perf_counter()
    for _ in range(n // group):
        for _ in range(group):
            log.append(payload)
        log.sync()
    dt = time.perf_counter() - t
    log.close()
    return n / dt, (n // group) / dt


def bench_replay(base: Path, n: int) -> tuple[float, float]:
    d = fresh(base, "replay")
    log = RecordLog(d)
    for i in range(n):
        log.append(b"group-%08d:topic-partition-offset" % i)  # ~40-byte payloads
    log.sync()
    log.close()
    # The full scan (no recovery point: as after a crash before any was stored);
    # bench/recovery_point.py measures an open that has one.
    (d / RECOVERY_POINT_FILE).unlink(missing_ok=True)
    t = time.perf_counter()
    log = RecordLog(d)
    open_dt = time.perf_counter() - t
    t = time.perf_counter()
    count = 0
    for _ in log.read_from(0):
        count += 1
    read_dt = time.perf_counter() - t
    assert count == n
    log.close()
    return n / open_dt, n / read_dt


def make_batch(size: int) -> bytes:
    tail = struct.pack(">hiqqqhii", 0, 0, 1000, 1000, -1, -1, -1, 1) + b"r" * (size - 61)
    return struct.pack(">qiibI", 0, len(tail) + 9, 0, 2, crc32c.crc32c(tail)) + tail


def bench_partition(base: Path, n: int) -> tuple[float, float]:
    d = fresh(base, "partition")
    log = PartitionLog(d)
    batch = make_batch(1024)
    t = time.perf_counter()
    for _ in range(n):
        log.append(batch)
    log.flush()
    append_dt = time.perf_counter() - t
    t = time.perf_counter()
    offset, total = 0, 0
    while offset < log.log_end_offset:
        data = log.read(offset, 1024 * 1024)
        total += len(data)
        offset += len(data) // len(batch)
    read_dt = time.perf_counter() - t
    log.close()
    mb = n * len(batch) / 1e6
    return mb / append_dt, mb / read_dt


def median(runs: list) -> float:
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--synced", type=int, default=50_000)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="kgroup-bench-storage-"))
    try:
        a = [bench_appends(base, args.records) for _ in range(3)]
        print(f"appends/s (100 B payload, buffered):      {median(a):>12,.0f}")
        s = [bench_synced(base, args.synced) for _ in range(3)]
        print(f"sync'd appends/s (100 per fsync):         {median([x[0] for x in s]):>12,.0f}"
              f"   ({median([x[1] for x in s]):,.0f} fsyncs/s)")
        r = [bench_replay(base, args.records) for _ in range(3)]
        print(f"open+recovery scan, records/s ({args.records:,}):  {median([x[0] for x in r]):>12,.0f}")
        print(f"replay read_from(0), records/s ({args.records:,}): {median([x[1] for x in r]):>12,.0f}")
        p = [bench_partition(base, 100_000) for _ in range(3)]
        print(f"partition log append, 1 KiB batches, MB/s: {median([x[0] for x in p]):>11,.1f}")
        print(f"partition log read (1 MiB fetches), MB/s:  {median([x[1] for x in p]):>11,.1f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
