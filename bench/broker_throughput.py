"""Produce and consume msg/s with confluent-kafka (librdkafka), 100-byte values.

    .venv/bin/python bench/broker_throughput.py [--quick] [--runs N] [--messages N]
        [--partitions 6] [--bootstrap HOST:PORT] [--peer tansu]

Per run: a fresh topic with P partitions (AdminClient), produce N messages (linger.ms=5,
batch.size 1 MB, batch.num.messages 100k) once with acks=1 and once with acks=all into two
topics, then consume the acks=1 topic with a Consumer assigned to every partition from the
beginning (no group), until N messages are read. msg/s = N / (time from the first produce()
call to the last delivery report) and N / (time from assign() to the N-th message).
Broker CPU-seconds are read from /proc when this script started the broker.
Without --bootstrap it starts `kgroup serve` with fsync=never (use --fsync to change).
"""

from __future__ import annotations

import argparse
import time
import uuid

import peers
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name]
    fut.result(30)
    # wait until metadata shows every partition with a leader
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {name} not visible after creation")


def produce(bootstrap: str, topic: str, n: int, acks: str) -> float:
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
        "batch.size": 1_000_000, "batch.num.messages": 100_000,
        "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
        "compression.type": "none", "enable.idempotence": False,
    })
    failed = [0]
    done = [0]

    def report(err, _msg):
        if err is not None:
            failed[0] += 1
        done[0] += 1

    value = b"v" * 100
    p.list_topics(topic, timeout=10)  # connect and learn leaders before the clock starts
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, on_delivery=report)
                break
            except BufferError:
                p.poll(0.001)
        if i & 0x3FFF == 0:
            p.poll(0)
    remaining = p.flush(120)
    dt = time.perf_counter() - t0
    if remaining or failed[0]:
        raise RuntimeError(f"produce acks={acks}: {failed[0]} failed, {remaining} not delivered")
    return n / dt


def consume(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
        "enable.auto.commit": False, "fetch.max.bytes": 52_428_800,
        "max.partition.fetch.bytes": 10_485_760, "fetch.wait.max.ms": 100,
        "queued.min.messages": 1_000_000,
    })
    try:
        c.list_topics(topic, timeout=10)
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])  # offset 0: beginning
        got = 0
        deadline = time.time() + 300
        while got < n:
            msgs = c.consume(num_messages=10_000, timeout=1.0)
            for m in msgs:
                if m.error() is not None:
                    raise KafkaException(m.error())
            got += len(msgs)
            if time.time() > deadline:
                raise RuntimeError(f"consumed only {got} of {n}")
        return n / (time.perf_counter() - t0)
    finally:
        c.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--messages", type=int, default=None, help="per run (default 1,000,000; 500,000 with --quick)")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--fsync", default="never", help="kgroup fsync policy when we start it (default never)")
    args = p.parse_args()
    n = args.messages or (500_000 if args.quick else 1_000_000)
    runs = args.runs if args.runs is not None else 3
    rows = {k: {} for k in ("produce acks=1 msg/s", "produce acks=all msg/s", "consume msg/s",
                            "broker CPU-s per 1M msgs (produce 1 + all + consume)")}
    cfg = peers.toml_config(fsync=args.fsync, initial_rebalance_delay_ms=0)
    for side in peers.sides(args):
        print(f"{side}:", flush=True)
        r1, ra, rc, cpus = [], [], [], []
        with peers.broker(args, side, cfg) as b:
            for r in range(runs):
                t1, ta = f"tp1-{uuid.uuid4().hex[:8]}", f"tpa-{uuid.uuid4().hex[:8]}"
                create_topic(b.bootstrap, t1, args.partitions)
                create_topic(b.bootstrap, ta, args.partitions)
                cpu0 = b.cpu_seconds()
                r1.append(produce(b.bootstrap, t1, n, "1"))
                ra.append(produce(b.bootstrap, ta, n, "all"))
                rc.append(consume(b.bootstrap, t1, args.partitions, n))
                cpu1 = b.cpu_seconds()
                if cpu0 is not None and cpu1 is not None:
                    cpus.append((cpu1 - cpu0) * 1_000_000 / n)
                print(f"  run {r + 1}: produce acks=1 {r1[-1]:,.0f}/s, acks=all {ra[-1]:,.0f}/s, "
                      f"consume {rc[-1]:,.0f}/s, broker CPU {cpus[-1] if cpus else float('nan'):.2f}s per 1M",
                      flush=True)
        for key, xs in zip(rows, (r1, ra, rc, cpus)):
            rows[key][side] = peers.median(xs)
    peers.print_table(f"confluent-kafka throughput, {n:,} x 100-byte messages, {args.partitions} partitions, "
                      f"{runs} runs (median)", list(rows.items()), peers.sides(args))


if __name__ == "__main__":
    main()
