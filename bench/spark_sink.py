"""The Spark sink's write path without Spark: `kgroup.spark.sink.write_batches`, in-process.

    .venv/bin/python bench/spark_sink.py                          # this tree, on a fresh kgroup serve
    .venv/bin/python bench/spark_sink.py --profile sink.prof       # and a cProfile of one run
    .venv/bin/python bench/spark_sink.py --trees OLD/src NEW/src   # two source trees, interleaved

What a Spark task of `df.write.format("kgroup")` does, minus Spark: --records (default
200,000) rows of 100-byte values with 8-byte keys, in Arrow record batches of 10,000 rows
(Spark's spark.sql.execution.arrow.maxRecordsPerBatch), written by `write_batches` to a new
4-partition topic with the sink's default settings (acks=all), on a fresh `kgroup serve`
(fsync=never) or --bootstrap. Each measurement runs in its own Python process (so --trees
can compare two versions of kgroup: PYTHONPATH picks the tree); runs are interleaved (A, B,
A, B, ...) and the medians of --runs (default 5) printed, with B/A when two trees are given.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH_ROWS = 10_000


def arrow_batches(records: int) -> list:
    import pyarrow as pa

    out = []
    for start in range(0, records, BATCH_ROWS):
        n = min(BATCH_ROWS, records - start)
        keys = pa.array([f"{i:08d}".encode() for i in range(start, start + n)], pa.binary())
        values = pa.array([b"x" * 100] * n, pa.binary())
        out.append(pa.RecordBatch.from_arrays([keys, values], names=["key", "value"]))
    return out


def worker(bootstrap: str, records: int, profile: str | None) -> None:
    """One measurement with the kgroup importable here; prints {"rows_per_s": ...}."""
    from kgroup.client import AdminClient
    from kgroup.spark.options import SinkOptions
    from kgroup.spark.sink import write_batches

    topic = f"sink-{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.create_topics({topic: 4})

    asyncio.run(create())
    batches = arrow_batches(records)
    opts = SinkOptions(bootstrap=bootstrap, topic=topic)
    prof = loop_prof = None
    if profile:
        # Both threads: the task's (Arrow to records) and the producer's event loop, whose
        # time the task's thread only sees as waiting on a lock.
        import cProfile
        import pstats

        import kgroup.spark.sink as sink_module
        prof, loop_prof = cProfile.Profile(), cProfile.Profile()

        class ProfiledLoop(sink_module.LoopThread):
            def __init__(self, *a, **kw) -> None:
                super().__init__(*a, **kw)
                self.loop.call_soon_threadsafe(loop_prof.enable)

            def close(self, *a, **kw) -> None:
                self.loop.call_soon_threadsafe(loop_prof.disable)
                super().close(*a, **kw)

        sink_module.LoopThread = ProfiledLoop
        prof.enable()
    started = time.perf_counter()
    message = write_batches(opts, iter(batches))
    took = time.perf_counter() - started
    if prof is not None:
        prof.disable()
        stats = pstats.Stats(prof)
        stats.add(loop_prof)
        stats.dump_stats(profile)
    assert message.records == records, (message.records, records)
    import kgroup
    print(json.dumps({"rows_per_s": records / took, "kgroup": os.path.dirname(kgroup.__file__)}))


def measure(tree: str | None, bootstrap: str, records: int, profile: str | None = None) -> float:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.path.abspath(tree) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--bootstrap", bootstrap,
           "--records", str(records)] + (["--profile", profile] if profile else [])
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    if tree and not got["kgroup"].startswith(os.path.abspath(tree)):
        sys.exit(f"bench/spark_sink.py: {tree} was not the kgroup imported ({got['kgroup']})")
    return got["rows_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="a running broker instead of kgroup serve")
    parser.add_argument("--trees", nargs="+", metavar="SRC", help="source trees to compare (PYTHONPATH)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile one extra run of the (first) tree")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.bootstrap, args.records, args.profile)
        return
    sys.path.insert(0, HERE)
    import peers

    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = peers.start_kgroup(peers.toml_config(fsync="never"))
        bootstrap = f"{broker.host}:{broker.port}"
    trees = args.trees or [None]
    results: dict[str | None, list[float]] = {t: [] for t in trees}
    loads = []
    try:
        measure(trees[0], bootstrap, min(args.records, 20_000))   # warm-up, unmeasured
        for run in range(args.runs):
            order = trees if run % 2 == 0 else trees[::-1]
            for tree in order:
                results[tree].append(measure(tree, bootstrap, args.records))
                print(f"run {run + 1}: {tree or 'this tree'} {results[tree][-1]:,.0f} rows/s",
                      flush=True)
            loads.append(os.getloadavg()[0])
        if args.profile:
            measure(trees[0], bootstrap, args.records, args.profile)
    finally:
        if broker is not None:
            broker.stop()
    print(f"{args.records:,} rows, medians of {args.runs} runs, load average "
          f"{min(loads):.1f}-{max(loads):.1f}")
    medians = {t: statistics.median(r) for t, r in results.items()}
    for tree, med in medians.items():
        runs = ", ".join(f"{r:,.0f}" for r in results[tree])
        print(f"  {tree or 'this tree'}: {med:,.0f} rows/s  ({runs})")
    if len(trees) == 2:
        a, b = trees
        print(f"  {b or 'this tree'} / {a or 'this tree'}: {medians[b] / medians[a]:.2f}x")


if __name__ == "__main__":
    main()
