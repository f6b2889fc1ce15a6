"""kgroup beside Apache Kafka 4.4 on this machine: every side-by-side figure of issue 35,
printed as markdown tables for bench/README.md.

    .venv/bin/python bench/kafka_side_by_side.py [--runs 3] [--quick] [--only NAME[,NAME]]
    make bench-kafka [ARGS=--quick]          (builds the Java bench clients first)

It runs, one after another, each benchmark below with --peer kafka (each starts its own
kgroup serve and Kafka 4.4 and alternates its runs between them; see each script's
docstring for what it measures and how):

  throughput   bench/broker_throughput.py: produce acks=all, 100-byte and 1 KiB records,
               1 and 3 producer processes (confluent-kafka, and as many Java producers),
               at kgroup fsync=always vs Kafka flush.messages=1 and both without; consume
               with 2 confluent-kafka consumers, 3 light Fetch clients and 2 Java
               consumers; broker CPU-seconds per million records; peak RSS
  rebalance    bench/broker_rebalance.py --join (classic) and bench/consumer_protocol.py
               --join (KIP-848): 100 and 1,000 members join one group; time to Stable and
               to every partition owned
  heartbeats   bench/consumer_protocol.py --heartbeats --tcp-only and
               bench/broker_heartbeats.py: heartbeats/s and per broker CPU-second
  load         bench/group_log_load.py: 1M and 10M offset commits, restart, time until
               every group answers its offsets; the broker's own load time; peak RSS
  memory       bench/group_memory.py: RSS per idle group with committed offsets and per
               live member

--quick runs everything tiny with one run (a smoke test of the scripts: its figures are
not results). Each script's own output goes to stderr as it runs; stdout gets the
tables. A benchmark that fails is reported and the rest go on.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
JAVA_CLIENT = HERE.parent / "build" / "bench-java" / "ThroughputClient.class"


def throughput(runs: int, quick: bool, java: bool) -> list[tuple[str, list[str]]]:
    combos = ([("always", 100, 1), ("never", 1024, 3)] if quick else
              [(f, size, p) for f in ("always", "never") for size in (100, 1024) for p in (1, 3)])
    out = []
    for fsync, size, producers in combos:
        argv = ["broker_throughput.py", "--peer", "kafka", "--runs", str(runs), "--acks-all-only",
                "--fsync", fsync, "--record-bytes", str(size), "--producers", str(producers),
                "--consumers", "2", "--raw-consumers", "3"]
        if java:
            argv += ["--java-producers", str(producers), "--java-consumers", "2"]
        if quick:
            argv += ["--messages", "20000", "--no-warmup"]
        out.append((f"throughput: {size}-byte records, {producers} producer(s), "
                    f"{'kgroup fsync=always vs Kafka flush.messages=1' if fsync == 'always' else 'no fsync on either'}",
                    argv))
    return out


def rebalance(runs: int, quick: bool) -> list[tuple[str, list[str]]]:
    sizes = ["--sizes", "10,50", "--partitions", "100"] if quick else ["--sizes", "100,1000", "--partitions", "1000"]
    cg_sizes = (["--sizes", "10,50", "--join-partitions", "100"] if quick
                else ["--sizes", "100,1000", "--join-partitions", "1000"])
    return [("rebalance, classic protocol", ["broker_rebalance.py", "--join", "--peer", "kafka", "--runs", str(runs),
                                             *sizes]),
            ("rebalance, consumer protocol (KIP-848)", ["consumer_protocol.py", "--join", "--peer", "kafka",
                                                        "--runs", str(runs), *cg_sizes])]


def heartbeats(runs: int, quick: bool) -> list[tuple[str, list[str]]]:
    # Kafka reads one request per connection at a time (it mutes a connection until its
    # answer is sent), so the load is spread over many connections with few in flight
    # on each: the same for both brokers. 5,000 partitions: Kafka's controller refuses a
    # CreateTopics of 10,000 ("excessively large batch operation": over 10,000 records).
    cg = (["--members", "300", "--tcp-groups", "3", "--connections", "16", "--window", "2", "--seconds", "2"]
          if quick else ["--members", "10000", "--partitions", "5000", "--tcp-groups", "100", "--connections", "128",
                         "--window", "2", "--seconds", "10"])
    classic = (["--members", "20", "--connections", "16", "--window", "2", "--seconds", "2"] if quick
               else ["--members", "100", "--connections", "64", "--window", "2", "--seconds", "10"])
    return [("heartbeats, consumer protocol", ["consumer_protocol.py", "--heartbeats", "--tcp-only", "--peer", "kafka",
                                               "--runs", str(runs), *cg]),
            ("heartbeats, classic protocol", ["broker_heartbeats.py", "--peer", "kafka", "--runs", str(runs), *classic])]


def load(runs: int, quick: bool) -> list[tuple[str, list[str]]]:
    return [("group-log load", ["group_log_load.py", "--peer", "kafka", "--runs", str(runs)]
             + (["--quick"] if quick else []))]


def memory(runs: int, quick: bool) -> list[tuple[str, list[str]]]:
    return [("memory per group and member", ["group_memory.py", "--peer", "kafka", "--runs", str(runs)]
             + (["--quick"] if quick else []))]


def tables(text: str) -> list[str]:
    """The markdown tables of a script's output, each with its title line."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|"):
            title = lines[i - 1] if i and lines[i - 1].strip() and not lines[i - 1].startswith("|") else ""
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append("\n".join(([f"*{title.strip()}*", ""] if title else []) + lines[i:j]))
            i = j
        else:
            i += 1
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=None, help="runs per figure (default 3; 1 with --quick)")
    p.add_argument("--quick", action="store_true", help="everything tiny, one run: a smoke test")
    p.add_argument("--only", default="throughput,rebalance,heartbeats,load,memory",
                   help="which parts, comma-separated (default all)")
    args = p.parse_args()
    runs = args.runs or (1 if args.quick else 3)
    java = JAVA_CLIENT.exists()
    plan = []
    for part in args.only.split(","):
        if part == "throughput":
            plan += throughput(runs, args.quick, java)
        elif part in ("rebalance", "heartbeats", "load", "memory"):
            plan += globals()[part](runs, args.quick)
        else:
            p.error(f"no part {part!r}")
    report = [f"## Beside Apache Kafka 4.4: {'--quick smoke (not results)' if args.quick else f'{runs} runs'}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"]
    if not java:
        report.append("(the Java clients are not built — `make bench-java` — so the Java rows are missing)")
    failed = []
    for title, argv in plan:
        cmd = [sys.executable, str(HERE / argv[0]), *argv[1:]]
        print(f"\n=== {title}: {' '.join(['bench/' + argv[0], *argv[1:]])}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        sys.stderr.write(proc.stdout)
        found = tables(proc.stdout)
        report.append(f"### {title}\n\n`{' '.join(['bench/' + argv[0], *argv[1:]])}` "
                      f"({time.monotonic() - t0:.0f} s)")
        if proc.returncode != 0 or not found:
            failed.append(title)
            report.append(f"**failed** (exit code {proc.returncode}); see its output above")
        report += found
    print("\n\n".join(report))
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
