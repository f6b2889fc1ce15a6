"""Client throughput: kgroup's asyncio Producer/Consumer vs kafka-python and aiokafka.

    .venv/bin/python bench/client.py [--messages N] [--partitions P] [--runs R] [--bootstrap H:P]

All three clients run against the same `kgroup serve` (fsync=never) in one run, 100-byte
values, no keys, acks=1, no compression. Produce: N sends then flush, msg/s = N / elapsed.
Consume: manual assignment of every partition of a topic holding N records, from the
beginning, no group; msg/s = N / (time to read all N). Each client consumes the topic it
produced. Medians over R runs; ratios are ours / theirs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

import peers  # noqa: F401  (puts src/ on sys.path)
from peers import start_kgroup, toml_config

from kgroup.client import AdminClient, Consumer, Producer, TopicPartition

VALUE = b"v" * 100


async def create(bootstrap: str, partitions: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    async with AdminClient(bootstrap) as admin:
        await admin.create_topics({name: partitions})
    return name


# -- ours ------------------------------------------------------------------------------------


async def ours_produce(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                  "batch.size": 1_000_000})
    await p.start()
    await p.partitions_for(topic)
    t0 = time.perf_counter()
    for _ in range(n):
        await p.send(topic, VALUE)
    await p.flush()
    dt = time.perf_counter() - t0
    await p.stop()
    return n / dt


async def ours_consume(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                  "max.poll.records": 100_000, "enable.auto.commit": False})
    await c.start()
    t0 = time.perf_counter()
    c.assign([TopicPartition(topic, i) for i in range(partitions)])
    got = 0
    while got < n:
        for records in (await c.getmany(timeout_ms=1000)).values():
            got += len(records)
    dt = time.perf_counter() - t0
    await c.close()
    return n / dt


# -- aiokafka --------------------------------------------------------------------------------


async def aiokafka_produce(bootstrap: str, topic: str, n: int) -> float:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5,
                         max_batch_size=1_000_000)
    await p.start()
    await p.partitions_for(topic)
    t0 = time.perf_counter()
    for _ in range(n):
        await p.send(topic, VALUE)
    await p.flush()
    dt = time.perf_counter() - t0
    await p.stop()
    return n / dt


async def aiokafka_consume(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as ATP

    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                         enable_auto_commit=False, max_partition_fetch_bytes=1 << 20)
    await c.start()
    t0 = time.perf_counter()
    c.assign([ATP(topic, i) for i in range(partitions)])
    got = 0
    while got < n:
        for records in (await c.getmany(timeout_ms=1000, max_records=100_000)).values():
            got += len(records)
    dt = time.perf_counter() - t0
    await c.stop()
    return n / dt


# -- kafka-python ----------------------------------------------------------------------------


def kafka_python_produce(bootstrap: str, topic: str, n: int) -> float:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5, batch_size=1_000_000)
    p.partitions_for(topic)
    t0 = time.perf_counter()
    for _ in range(n):
        p.send(topic, VALUE)
    p.flush()
    dt = time.perf_counter() - t0
    p.close()
    return n / dt


def kafka_python_consume(bootstrap: str, topic: str, partitions: int, n: int) -> float:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                      enable_auto_commit=False)
    t0 = time.perf_counter()
    c.assign([KTP(topic, i) for i in range(partitions)])
    got = 0
    while got < n:
        for records in c.poll(timeout_ms=1000, max_records=100_000).values():
            got += len(records)
    dt = time.perf_counter() - t0
    c.close()
    return n / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--bootstrap")
    args = ap.parse_args()
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = start_kgroup(toml_config(fsync="never"))
        bootstrap = broker.bootstrap
    n, parts = args.messages, args.partitions
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.runs):
            for side in ("kgroup", "aiokafka", "kafka-python"):
                topic = asyncio.run(create(bootstrap, parts))
                if side == "kgroup":
                    prod = asyncio.run(ours_produce(bootstrap, topic, n))
                    cons = asyncio.run(ours_consume(bootstrap, topic, parts, n))
                elif side == "aiokafka":
                    prod = asyncio.run(aiokafka_produce(bootstrap, topic, n))
                    cons = asyncio.run(aiokafka_consume(bootstrap, topic, parts, n))
                else:
                    prod = kafka_python_produce(bootstrap, topic, n)
                    cons = kafka_python_consume(bootstrap, topic, parts, n)
                results.setdefault((side, "produce"), []).append(prod)
                results.setdefault((side, "consume"), []).append(cons)
    finally:
        if broker is not None:
            broker.stop()
    print(f"{n:,} messages x 100 B, {parts} partitions, median of {args.runs} run(s), msg/s")
    print(f"| op | kgroup | aiokafka | kafka-python | kgroup/aiokafka | kgroup/kafka-python |")
    print("|---|---:|---:|---:|---:|---:|")
    for op in ("produce", "consume"):
        ours = statistics.median(results[("kgroup", op)])
        aio = statistics.median(results[("aiokafka", op)])
        kp = statistics.median(results[("kafka-python", op)])
        print(f"| {op} | {ours:,.0f} | {aio:,.0f} | {kp:,.0f} | {ours / aio:.2f}x | "
              f"{ours / kp:.2f}x |")


if __name__ == "__main__":
    main()
