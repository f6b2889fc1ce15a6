"""Share groups (KIP-932): records accepted per second with 1, 3 and 10 confluent-kafka
ShareConsumers on a 2-partition topic, beside a consumer group on the same kind of topic,
and the latency of an explicit acknowledgement (ShareAcknowledge, commit_sync).

    .venv/bin/python bench/share_groups.py [--quick] [--runs N] [--records N] [--fsync always|never]
        [--bootstrap HOST:PORT] [--mock]

Per run and member count: a fresh 2-partition topic with N 100-byte records; M
ShareConsumers (implicit acknowledgement, one thread each) in a fresh share group consume
until every record was delivered once, then close (sending the last acknowledgements);
records/s = N / (first subscribe to the last close), checked by the share partitions'
lag reaching 0. The consumer-group figure is one classic confluent-kafka
Consumer in a fresh group reading the same N records (auto commit). Acknowledgement latency:
one explicit-mode ShareConsumer accepts one record at a time with commit_sync (one
ShareAcknowledge each), 200 times.
`--mock` measures librdkafka's mock cluster the same way (in-process, no durability).
Without --bootstrap it starts `kgroup serve` (fsync as --fsync, default always: an
acknowledgement is answered once durable).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
import uuid

import peers
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from kgroup.client.admin import AdminClient as OurAdmin

SHARE_GROUP_SETTINGS = ('share_auto_offset_reset = "earliest"\nshare_heartbeat_interval_ms = 1000\n')


def make_topic(bootstrap: str, records: int, mock=None) -> str:
    name = f"share-bench-{uuid.uuid4().hex[:8]}"
    if mock is not None:
        mock.create_topic(name, 2)
    else:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10_000})
    value = b"x" * 100
    for i in range(records):
        producer.produce(name, value, partition=i % 2)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return name


def share_run(bootstrap: str, topic: str, members: int, records: int) -> tuple[float, str]:
    group = f"g-{uuid.uuid4().hex[:8]}"
    seen: set[tuple[int, int]] = set()
    lock = threading.Lock()
    done = threading.Event()

    def member() -> None:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        consumer.subscribe([topic])
        try:
            while not done.is_set():
                for m in consumer.poll(0.2) or []:
                    if m.error() is None:
                        with lock:
                            seen.add((m.partition(), m.offset()))
                with lock:
                    if len(seen) >= records:
                        done.set()
        finally:
            consumer.commit_sync(30)      # implicit mode: accept the last poll's records too
            consumer.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=member) for _ in range(members)]
    for t in threads:
        t.start()
    if not done.wait(300):
        raise RuntimeError(f"only {len(seen)} of {records} records delivered")
    for t in threads:
        t.join(60)
    return records / (time.perf_counter() - started), group


def unacknowledged(bootstrap: str, group: str) -> int:
    """Records of the share group not yet accepted: the sum of its share partitions' lag
    (KIP-1226: past the start offset, neither acknowledged nor archived). The start offset
    alone does not say it: it is the persisted one, which moves one state write late, as
    Kafka's does."""
    async def go() -> int:
        async with OurAdmin(bootstrap) as admin:
            offsets = (await admin.share_group_offsets(group)).values()
            return sum(lag for _, lag in offsets) if offsets else -1
    return asyncio.run(go())


def consumer_group_run(bootstrap: str, topic: str, records: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"cg-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest"})
    started = time.perf_counter()
    consumer.subscribe([topic])
    got = 0
    while got < records:
        for m in consumer.consume(1000, 0.5):
            if m.error() is None:
                got += 1
    consumer.close()
    return records / (time.perf_counter() - started)


def ack_latency(bootstrap: str, topic: str, count: int = 200) -> list[float]:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4().hex[:8]}",
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    out: list[float] = []
    try:
        deadline = time.monotonic() + 120
        while len(out) < count and time.monotonic() < deadline:
            for m in consumer.poll(1.0) or []:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                t0 = time.perf_counter()
                consumer.commit_sync(30)            # one ShareAcknowledge for this one record
                out.append((time.perf_counter() - t0) * 1000)
    finally:
        consumer.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    peers.add_args(p)
    p.add_argument("--records", type=int, default=None, help="records per run (default 20,000; 5,000 quick)")
    p.add_argument("--fsync", default="always")
    p.add_argument("--mock", action="store_true", help="also measure librdkafka's mock cluster")
    args = p.parse_args()
    runs = peers.runs(args)
    records = args.records or (5_000 if args.quick else 20_000)
    cfg = peers.toml_config(fsync=args.fsync, initial_rebalance_delay_ms=0).replace(
        "[group]\n", "[group]\n" + SHARE_GROUP_SETTINGS)
    sides = ["kgroup"] + (["mock"] if args.mock else [])
    rows: dict[str, dict[str, object]] = {}
    latency_rows: dict[str, dict[str, object]] = {}
    for side in sides:
        mock = None
        if side == "mock":
            sys.path.insert(0, str(peers.ROOT))
            from tests.integration.rdkafka_mock import MockCluster  # noqa: PLC0415 (only with --mock)

            mock = MockCluster(brokers=1)
            mock.share_groups(record_lock_ms=30_000, delivery_limit=5, earliest=True)
            ctx = None
            bootstrap = mock.bootstrap
        else:
            ctx = peers.broker(args, "ours", cfg)
            bootstrap = ctx.__enter__().bootstrap
        try:
            for members in (1, 3, 10):
                rates = []
                for _ in range(runs):
                    rate, group = share_run(bootstrap, make_topic(bootstrap, records, mock), members, records)
                    if mock is None and (left := unacknowledged(bootstrap, group)) != 0:
                        raise RuntimeError(f"group {group}: not every record was accepted ({left} left)")
                    rates.append(rate)
                rows.setdefault(f"share group, {members} member(s), records/s", {})[side] = peers.median(rates)
            rates = [consumer_group_run(bootstrap, make_topic(bootstrap, records, mock), records) for _ in range(runs)]
            rows.setdefault("consumer group (classic), 1 member, records/s", {})[side] = peers.median(rates)
            lat = sorted(ack_latency(bootstrap, make_topic(bootstrap, 400, mock)))
            latency_rows.setdefault("commit_sync of one ACCEPT, median ms", {})[side] = peers.median(lat)
            latency_rows.setdefault("commit_sync of one ACCEPT, p99 ms", {})[side] = lat[int(len(lat) * 0.99) - 1]
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
            if mock is not None:
                mock.close()
    peers.print_table(f"Share-group consume throughput, {records:,} x 100-byte records, 2 partitions, "
                      f"{runs} runs (median), fsync={args.fsync}", list(rows.items()), sides)
    peers.print_table("Acknowledgement latency (explicit mode, 200 commits)", list(latency_rows.items()), sides,
                      higher_is_better=False)


if __name__ == "__main__":
    main()
