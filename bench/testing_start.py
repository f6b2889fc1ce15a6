"""How long a test waits for a broker: `kgroup.testing.Broker().start()` to ready, and stop.

    .venv/bin/python bench/testing_start.py [--runs 10]

Each run starts a broker in a fresh temp dir on free ports (what the `kgroup_broker` fixture
does), waits until the control API says every coordinator shard is loaded, creates a topic,
and stops it (SIGTERM, waiting for exit). Prints the median and the spread of start, first
topic and stop times, and what the broker process spends importing kgroup (`python -X
importtime`, the largest part of a start), with the machine's load average beside them.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

from peers import ROOT  # noqa: F401  (puts src/ on sys.path)

from kgroup.testing import Broker


def import_seconds() -> float:
    """Cumulative import time of the broker module in a fresh interpreter, as `kgroup serve`
    loads it (without hypothesis' strategies for kio: cli/main.py run_serve)."""
    code = "import sys; sys.modules['hypothesis'] = None; import kgroup.broker.server"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                          capture_output=True, text=True, check=True)
    line = next(line for line in done.stderr.splitlines() if re.search(r"\| kgroup\.broker\.server$", line))
    return int(line.split("|")[1]) / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=10)
    args = p.parse_args()
    starts, topics, stops, imports = [], [], [], []
    for r in range(args.runs):
        broker = Broker()
        t0 = time.perf_counter()
        broker.start()
        t1 = time.perf_counter()
        broker.create_topic("bench", 4)
        t2 = time.perf_counter()
        broker.close()
        t3 = time.perf_counter()
        starts.append(t1 - t0)
        topics.append(t2 - t1)
        stops.append(t3 - t2)
        imports.append(import_seconds())
        print(f"  run {r + 1}: start {t1 - t0:.3f} s, create a topic {t2 - t1:.3f} s, stop {t3 - t2:.3f} s, "
              f"imports {imports[-1]:.3f} s", flush=True)

    def cell(xs: list[float]) -> str:
        return f"{statistics.median(xs):.3f} s ({min(xs):.3f}-{max(xs):.3f})"

    print(f"\nBroker for a test, {args.runs} runs, load average {os.getloadavg()[0]:.1f} (median, min-max)")
    print("| step | time |\n|---|---:|")
    print(f"| start, until every shard is loaded | {cell(starts)} |")
    print(f"| of which the broker's imports | {cell(imports)} |")
    print(f"| create a topic (first Kafka request) | {cell(topics)} |")
    print(f"| stop (SIGTERM until exit) and remove | {cell(stops)} |")


if __name__ == "__main__":
    main()
