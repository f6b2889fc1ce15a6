"""Replay speed of the group-metadata log: 1M offset commits, broker startup and in-process load.

    .venv/bin/python bench/broker_replay.py [--quick] [--runs N] [--records 1000000]
        [--groups 1000] [--keep DIR] [--peer tansu]

A data dir is built directly with kgroup.storage.DataDir: N OffsetCommitRecords (encoded
with kgroup.core.record_codec) spread over G groups x 10 topics x 10 partitions, appended to
the group-metadata partition of each group (50 partitions), with distinct offsets so every
record is a live update. Then, per run:
- serve: start `kgroup serve` on it and read its stderr line "coordinator loaded: records=N
  ... seconds=S" (the broker's own replay time: snapshot + log tail, decode, replay), and the
  wall time from process start to that line (includes Python start-up and imports);
- in-process: DataDir open + `Shard(...).load()` over every partition, timed here.
Figures are records/s (median). --bootstrap is not used (the data dir must be ours).
Tansu runs on memory storage here, which has no log to replay: its column is n/a.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import peers
from kgroup.broker.durability import Durability
from kgroup.broker.groups.shard import Shard
from kgroup.core import record_codec
from kgroup.core.config import GroupConfig
from kgroup.core.records import OffsetCommitRecord, OffsetCommitValue
from kgroup.storage import DataDir
from kgroup.storage.config import FsyncPolicy

LOADED = re.compile(r"coordinator loaded: records=(\d+) groups=(\d+) seconds=([0-9.]+)")


def build_data_dir(path: Path, n: int, groups: int) -> None:
    t = time.perf_counter()
    now = int(time.time() * 1000)
    with DataDir(path) as d:
        log = d.metadata_log
        gids = [f"group-{g}" for g in range(groups)]
        parts = [log.for_group(g) for g in gids]
        encode = record_codec.encode
        for i in range(n):
            g = i % groups
            k = i // groups
            rec = OffsetCommitRecord(gids[g], f"topic-{k % 10}", (k // 10) % 10,
                                     OffsetCommitValue(i, 0, "", now))
            parts[g].append(encode(rec))
        log.sync()
    print(f"  built {n:,} offset commits over {groups:,} groups in {time.perf_counter() - t:.1f}s "
          f"({sum(f.stat().st_size for f in path.rglob('*') if f.is_file()) / 1e6:.0f} MB)", flush=True)


def serve_once(data: Path, stops: list[float]) -> tuple[int, float, float]:
    """Start kgroup serve on `data`, wait for "coordinator loaded", SIGTERM it; appends the
    seconds from SIGTERM to exit to `stops`."""
    port = peers.free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(peers.KGROUP), "serve", "--listen", f"127.0.0.1:{port}",
                             "--data-dir", str(data), "--fsync", "never"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            m = LOADED.search(line)
            if m:
                wall = time.perf_counter() - t0
                return int(m.group(1)), float(m.group(3)), wall
        raise RuntimeError(f"kgroup serve exited ({proc.wait()}) without 'coordinator loaded'")
    finally:
        # Keep reading stderr until it closes: a broker blocked writing a log line to a full
        # pipe could not exit, and that would be this script's fault, not the broker's.
        tail: list[str] = []
        reader = threading.Thread(target=lambda: [tail.append(x) for x in proc.stderr], daemon=True)
        reader.start()
        t_stop = time.perf_counter()
        proc.terminate()
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            print("  kgroup serve did not exit within 120 s of SIGTERM; killed", flush=True)
        stop_s = time.perf_counter() - t_stop
        stops.append(stop_s)
        if stop_s > 5:
            print(f"  kgroup serve took {stop_s:.1f}s to exit after SIGTERM; its last lines: "
                  + " | ".join(x.strip() for x in tail[-5:]), flush=True)


async def _load_in_process(data: Path) -> tuple[int, float, float]:
    t0 = time.perf_counter()
    d = DataDir(data)
    try:
        t1 = time.perf_counter()
        dur = Durability(FsyncPolicy.parse("never"))
        log = d.metadata_log
        total = 0
        shards = [Shard(i, log.partition(i), GroupConfig(), dur, lambda p: p + "-x")
                  for i in range(log.num_partitions)]
        for s in shards:
            total += s.load()
        t2 = time.perf_counter()
        for s in shards:
            s.close()
        return total, t2 - t1, t2 - t0
    finally:
        d.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=1000)
    p.add_argument("--keep", help="build (or reuse) the data dir here instead of a temp dir")
    args = p.parse_args()
    runs = peers.runs(args)
    tmp = None
    if args.keep:
        data = Path(args.keep)
    else:
        tmp = tempfile.mkdtemp(prefix="kgroup-replay-")
        data = Path(tmp) / "data"
    try:
        if not (data / "group-metadata").exists():
            build_data_dir(data, args.records, args.groups)
        serve_rate, serve_wall, inproc, inproc_open, stops = [], [], [], [], []
        for r in range(runs):
            n, secs, wall = serve_once(data, stops)
            serve_rate.append(n / secs)
            serve_wall.append(n / wall)
            n2, load_s, total_s = asyncio.run(_load_in_process(data))
            inproc.append(n2 / load_s)
            inproc_open.append(n2 / total_s)
            print(f"  run {r + 1}: serve replayed {n:,} in {secs:.2f}s ({n / secs:,.0f}/s; "
                  f"{wall:.2f}s from exec to loaded); in-process load {n2:,} in {load_s:.2f}s "
                  f"({n2 / load_s:,.0f}/s), with DataDir open {total_s:.2f}s; serve exited "
                  f"{stops[-1]:.2f}s after SIGTERM", flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    sides = peers.sides(args)
    na = {s: "n/a (memory storage)" for s in sides if s != "ours"}
    peers.print_table(
        f"Replay of {args.records:,} offset commits over {args.groups:,} groups, {runs} runs (median records/s)",
        [("kgroup serve: 'coordinator loaded' seconds", {"ours": peers.median(serve_rate), **na}),
         ("kgroup serve: exec -> loaded (wall)", {"ours": peers.median(serve_wall), **na}),
         ("in-process Shard.load() x 50", {"ours": peers.median(inproc), **na}),
         ("in-process DataDir open + load", {"ours": peers.median(inproc_open), **na}),
         ("kgroup serve: seconds from SIGTERM to exit (not records/s)", {"ours": peers.median(stops), **na})],
        sides)


if __name__ == "__main__":
    main()
