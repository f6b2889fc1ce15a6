"""The recovery point (storage/recovery_point.py): takeover and start-up of a 1M-record log,
without it (today's full scan) and with it. Prints medians of --runs runs, wall and CPU.

    .venv/bin/python bench/recovery_point.py [--records 1000000] [--runs 3] [--dir PATH]

The logs are written once, with an fsync every 10,000 records (group commit), and copied as
they are on disk right after the last fsync: what a `kill -9` leaves (the recovery point is
then the last one stored, up to 8 MiB before the end). Each run opens a fresh copy:
- takeover (seal): node 1 takes over group-metadata partition 0 from node 0 (`DataDir`
  acquire + open_unit: measure the sizes, scan, build the new epoch directory) -- the step
  the cluster's takeover figure includes; `before` removes the point file first.
- start-up, group-metadata log: `RecordLog` open of the same records (64-byte payloads).
- start-up, partition log: `PartitionLog` open of 1M records in batches of 10 (the header
  walk for the index stays; only the batch CRCs before the point are skipped).
- clean start-up: the group-metadata log after a clean shutdown (point at the end).
CPU seconds are this process's (one thread), so they hold on a machine loaded by others.
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

from kgroup.storage.data_dir import DataDir, NodeMembership  # noqa: E402
from kgroup.storage.partition_log import PartitionLog  # noqa: E402
from kgroup.storage.record_log import RecordLog  # noqa: E402
from kgroup.storage.recovery_point import RECOVERY_POINT_FILE  # noqa: E402

NODES = (0, 1, 2)
SYNC_EVERY = 10_000


def node(path: Path, me: int) -> DataDir:
    return DataDir(path, metadata_partitions=4, membership=NodeMembership(NODES, me, exclusive=False))


def payload(i: int) -> bytes:
    return b"%064d" % i


def batch_of_10(i: int) -> bytes:
    # A v2 batch of 10 records (lastOffsetDelta 9), ~500 bytes; storage reads the header only.
    tail = struct.pack(">hiqqqhii", 0, 9, 1000 + i, 1000 + i, -1, -1, -1, 10) + b"r" * 440
    return struct.pack(">qiibI", 0, len(tail) + 9, 0, 2, crc32c.crc32c(tail)) + tail


def fill(log, n: int, item, every: int = SYNC_EVERY) -> None:
    """Append item(0..n-1) to `log` (a log or a metadata partition), an fsync every
    `every` appends and one at the end."""
    for i in range(n):
        log.append(item(i))
        if i % every == every - 1:
            log.sync()
    log.sync()


def write_templates(base: Path, n: int) -> dict[str, Path]:
    """Write the logs once; copy each as a kill -9 after its last fsync leaves it."""
    out = {}
    # Group-metadata unit 0 of a cluster data dir, owned by node 0.
    d = base / "w-cluster"
    a = node(d, 0)
    epoch = a.acquire(0)
    a.open_unit(0, epoch)
    fill(a.metadata_log.partition(0), n, payload)
    out["cluster"] = base / "t-cluster"
    shutil.copytree(d, out["cluster"], symlinks=True)
    a.close()
    # The same records in a plain log (a single broker's start-up).
    d = base / "w-records"
    log = RecordLog(d)
    fill(log, n, payload)
    out["records"] = base / "t-records"
    shutil.copytree(d, out["records"], symlinks=True)
    log.close()                              # a clean shutdown: the point at the end
    out["records-clean"] = base / "t-records-clean"
    shutil.copytree(d, out["records-clean"], symlinks=True)
    # A partition log: n records in batches of 10.
    d = base / "w-partition"
    plog = PartitionLog(d)
    fill(plog, n // 10, batch_of_10, SYNC_EVERY // 10)   # batches of 10 records
    out["partition"] = base / "t-partition"
    shutil.copytree(d, out["partition"], symlinks=True)
    plog.close()
    return out


def drop_points(path: Path) -> None:
    for f in path.rglob(RECOVERY_POINT_FILE):
        f.unlink()


def timed(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def one_run(base: Path, template: Path, kind: str, with_point: bool, expect: int) -> tuple[float, float]:
    run = base / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(template, run, symlinks=True)
    if not with_point:
        drop_points(run)
    if kind == "cluster":
        b = node(run, 1)

        def take() -> None:
            epoch = b.acquire(0)
            b.open_unit(0, epoch)

        result = timed(take)
        assert b.metadata_log.partition(0).log_end_offset == expect
        b.close()
    else:
        cls = PartitionLog if kind == "partition" else RecordLog
        box = []
        result = timed(lambda: box.append(cls(run)))
        assert box[0].log_end_offset == expect, (box[0].log_end_offset, expect)
        box[0].close()
    shutil.rmtree(run, ignore_errors=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    n = args.records
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="kgroup-bench-recovery-"))
    try:
        templates = write_templates(base, n)
        print(f"{n:,} records; medians of {args.runs} runs; wall s / CPU s")
        print(f"{'':44}{'before (full scan)':>22}{'after (recovery point)':>26}{'speed-up':>10}")
        for label, kind, key in [("takeover (seal), group-metadata log", "cluster", "cluster"),
                                 ("start-up after kill -9, group-metadata log", "records", "records"),
                                 ("start-up after kill -9, partition log", "partition", "partition"),
                                 ("start-up after clean shutdown, g-m log", "records", "records-clean")]:
            figures = {}
            for with_point in (False, True):
                runs = [one_run(base, templates[key], kind, with_point, n) for _ in range(args.runs)]
                figures[with_point] = (statistics.median(r[0] for r in runs),
                                       statistics.median(r[1] for r in runs))
            (bw, bc), (aw, ac) = figures[False], figures[True]
            print(f"{label:44}{bw:>10.3f} / {bc:>7.3f}{aw:>14.3f} / {ac:>7.3f}"
                  f"{bw / aw:>9.1f}x", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
