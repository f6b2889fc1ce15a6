"""What a Spark task's Python worker pays to load kgroup before it reads a record.

    .venv/bin/python bench/spark_worker_start.py --runs 9
    .venv/bin/python bench/spark_worker_start.py --runs 9 --against /tmp/main-src

A Python data source's task runs in a Python worker Spark starts; it unpickles our reader
(importing ``kgroup.spark.source`` / ``kgroup.spark.stream``) and, reading, loads the
message classes its consumer speaks (ApiVersions, Metadata, ListOffsets, Fetch). Each run is
a fresh interpreter doing exactly that after loading what the worker has loaded anyway
(pyspark's data source module, pyarrow, numpy), timed from inside (wall clock and CPU time
of the imports and loads) and by ``-X importtime`` (the sum of kgroup's top-level imports). With ``--against DIR``
(a ``src`` folder of another checkout, e.g. ``git archive main src | tar -x -C DIR``) the
runs alternate between this checkout and that one, and the ratios are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"

_WORKER = r"""
import time
import numpy, pyarrow, pyspark.sql.datasource   # a worker has these loaded before our code
t0, c0 = time.perf_counter(), time.process_time()
import kgroup.spark.source, kgroup.spark.stream, kgroup.spark.range_reader
from kgroup.client.versions import CLIENT_APIS
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import request_class, response_class
for key in (ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.LIST_OFFSETS, ApiKey.FETCH):
    v = CLIENT_APIS[key].max_version
    request_class(key, v), response_class(key, v)
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def one(src: Path) -> tuple[float, float, float]:
    """(seconds loading kgroup after pyspark, CPU seconds of that, summed top-level
    -X importtime of kgroup)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", _WORKER], env=env,
                          capture_output=True, text=True, check=True)
    top = 0
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].startswith(" kgroup"):   # top level: one space
            top += int(parts[1])
    wall, cpu = map(float, done.stdout.split())
    return wall, cpu, top / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--against", type=Path, help="another checkout's src folder")
    args = parser.parse_args()
    sides = {"this": HERE} | ({"against": args.against} if args.against else {})
    got: dict[str, list[tuple[float, float, float]]] = {s: [] for s in sides}
    for i in range(args.runs):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for side in order:
            got[side].append(one(sides[side]))
    for side, runs in got.items():
        wall, cpu, imp = (statistics.median(r[k] for r in runs) for k in range(3))
        print(f"{side:8s} {sides[side]}: median {wall:.3f} s loading kgroup ({cpu:.3f} CPU s; "
              f"-X importtime top level {imp:.3f} s), {len(runs)} runs")
    if args.against:
        for k, what in ((0, "wall"), (1, "CPU"), (2, "importtime")):
            ratios = [a[k] / b[k] for a, b in zip(got["against"], got["this"])]
            print(f"against/this ({what}): median {statistics.median(ratios):.2f}x "
                  f"(runs {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
