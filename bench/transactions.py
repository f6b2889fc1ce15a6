"""Transactional produce throughput against plain acks=all, and EndTxn latency (confluent-kafka).

    .venv/bin/python bench/transactions.py [--quick] [--runs N] [--messages N]
        [--partitions 6] [--fsync never] [--bootstrap HOST:PORT] [--peer tansu]

Per run, into fresh topics of P partitions, 100-byte values:
- plain: N messages with acks=all (idempotence off, linger.ms=5, 1 MB batches);
  msg/s = N / (first produce() to the last delivery report);
- transactional: the same N messages in transactions of 1,000 (begin, produce 1,000, flush,
  commit_transaction) with one transactional producer; msg/s over the whole loop. The time
  of each commit_transaction after its flush is the EndTxn latency (the records are already
  acknowledged, so it is the EndTxn round trip: PrepareCommit made durable, then the answer);
  median and p99 over every transaction of every run.
Medians over the runs. Without --bootstrap it starts `kgroup serve` with fsync=never (as
Tansu's memory storage engine never syncs either; --fsync always to measure group commit).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import peers
from broker_throughput import create_topic, produce
from confluent_kafka import Producer

VALUE = b"v" * 100
TXN_SIZE = 1000


def transactional(bootstrap: str, topic: str, n: int) -> tuple[float, list[float]]:
    """msg/s of N messages in 1,000-message transactions, and each EndTxn's seconds."""
    p = Producer({
        "bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}",
        "linger.ms": 5, "batch.size": 1_000_000, "batch.num.messages": 100_000,
        "queue.buffering.max.messages": 1_000_000, "compression.type": "none",
    })
    p.init_transactions(30)
    p.list_topics(topic, timeout=10)
    commits: list[float] = []
    t0 = time.perf_counter()
    for _ in range(n // TXN_SIZE):
        p.begin_transaction()
        for _ in range(TXN_SIZE):
            p.produce(topic, VALUE)
        if p.flush(60):
            raise RuntimeError("transactional records not delivered")
        c0 = time.perf_counter()
        p.commit_transaction(60)
        commits.append(time.perf_counter() - c0)
    return (n // TXN_SIZE) * TXN_SIZE / (time.perf_counter() - t0), commits


def p99(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--messages", type=int, default=None, help="per run (default 200,000; 50,000 with --quick)")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--fsync", default="never", help="kgroup fsync policy when we start it (default never)")
    args = p.parse_args()
    n = args.messages or (50_000 if args.quick else 200_000)
    runs = peers.runs(args)
    rows = {k: {} for k in ("produce acks=all msg/s", "transactional (1,000-msg transactions) msg/s",
                            "transactional / acks=all")}
    latency = {k: {} for k in ("EndTxn median ms", "EndTxn p99 ms")}
    cfg = peers.toml_config(fsync=args.fsync, initial_rebalance_delay_ms=0)
    for side in peers.sides(args):
        print(f"{side}:", flush=True)
        plain, txn, ratios, commits = [], [], [], []
        with peers.broker(args, side, cfg) as b:
            for r in range(runs):
                tp, tt = f"plain-{uuid.uuid4().hex[:8]}", f"txn-{uuid.uuid4().hex[:8]}"
                create_topic(b.bootstrap, tp, args.partitions)
                create_topic(b.bootstrap, tt, args.partitions)
                plain.append(produce(b.bootstrap, tp, n, "all"))
                rate, latencies = transactional(b.bootstrap, tt, n)
                txn.append(rate)
                ratios.append(rate / plain[-1])
                commits += latencies
                print(f"  run {r + 1}: acks=all {plain[-1]:,.0f}/s, transactional {rate:,.0f}/s, "
                      f"EndTxn median {statistics.median(latencies) * 1000:.2f} ms", flush=True)
        rows["produce acks=all msg/s"][side] = peers.median(plain)
        rows["transactional (1,000-msg transactions) msg/s"][side] = peers.median(txn)
        rows["transactional / acks=all"][side] = f"{peers.median(ratios):.2f}"
        latency["EndTxn median ms"][side] = statistics.median(commits) * 1000
        latency["EndTxn p99 ms"][side] = p99(commits) * 1000
    peers.print_table(f"confluent-kafka, {n:,} x 100-byte messages per run, {args.partitions} partitions, "
                      f"{runs} runs (median)", list(rows.items()), peers.sides(args))
    peers.print_table(f"EndTxn latency over all {n // TXN_SIZE * runs} transactions of the runs",
                      list(latency.items()), peers.sides(args), higher_is_better=False)


if __name__ == "__main__":
    main()
