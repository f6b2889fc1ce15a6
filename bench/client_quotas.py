"""A throttled producer beside an unthrottled one: the rate a producer_byte_rate quota holds a
librdkafka producer to, on kgroup and on Apache Kafka 4.4, side by side.

    .venv/bin/python bench/client_quotas.py [--quota 1000000] [--seconds 30] [--brokers kgroup,kafka]

Per broker: a fresh topic; the quota set on one client id with AlterClientQuotas (kgroup's
admin client, the same request on both); a confluent-kafka producer with that client id
sends 1000-byte records as fast as it may for --seconds. Its rate is measured as the quota
counts it, from the delivery reports: the bytes delivered after the first 11 s (Kafka's 11
one-second windows: before them the first burst is measured over at least ten windows and
passes faster) divided by the time they took; the ratio to the quota is the point (the quota
counts whole Produce requests, a little more than the records). The sum of the throttle
times the client reported is given too. Kafka 4.4 needs `make reference` (its jars).
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from peers import ROOT  # noqa: F401  (puts src/ on sys.path)

from kgroup.client.admin import AdminClient
from kgroup.client.quotas_admin import alter_client_quotas

VALUE = b"x" * 1000
WARM_UP_S = 11.0


def set_quota(bootstrap: str, client_id: str, quota: float) -> None:
    async def go() -> None:
        admin = AdminClient(bootstrap)
        await admin.start()
        try:
            await admin.create_topics({f"quota-bench-{client_id}": 1})
            await alter_client_quotas(admin, [("client-id", client_id)], {"producer_byte_rate": quota}, [])
        finally:
            await admin.close()
    asyncio.run(go())


def measure(bootstrap: str, quota: float, seconds: float) -> dict[str, float]:
    from confluent_kafka import Producer

    client_id = f"bench-{uuid.uuid4().hex[:8]}"
    set_quota(bootstrap, client_id, quota)
    time.sleep(1.0)                     # Kafka applies the quota through its controller
    delivered: list[float] = []
    throttles: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                         "batch.size": 65536, "queue.buffering.max.kbytes": 2048,
                         "throttle_cb": lambda e: throttles.append(e.throttle_time)})
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(f"quota-bench-{client_id}", VALUE,
                             on_delivery=lambda err, msg: err is None and delivered.append(time.monotonic()))
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(60)
    late = [t for t in delivered if t - started >= WARM_UP_S]
    rate = len(late) * len(VALUE) / max(late[-1] - late[0], 1e-9) if len(late) > 1 else 0.0
    return {"rate": rate, "ratio": rate / quota, "throttle_s": sum(throttles), "records": len(delivered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quota", type=float, default=1_000_000, help="producer_byte_rate (default: 1000000)")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the producer sends (default: 30)")
    parser.add_argument("--brokers", default="kgroup,kafka", help="kgroup, kafka or both (default)")
    args = parser.parse_args()
    results = {}
    for side in args.brokers.split(","):
        if side == "kgroup":
            from kgroup.testing import Broker
            with Broker() as broker:
                results[side] = measure(broker.bootstrap, args.quota, args.seconds)
        elif side == "kafka":
            from kgroup.testing.reference import ReferenceKafka
            with ReferenceKafka() as kafka:
                results[side] = measure(kafka.bootstrap, args.quota, args.seconds)
        else:
            parser.error(f"--brokers: {side!r} is not kgroup or kafka")
    print(f"producer_byte_rate {args.quota:,.0f} B/s, {args.seconds:.0f} s of 1000-byte records, "
          f"rate measured after the first {WARM_UP_S:.0f} s")
    print("| broker | records B/s | of the quota | throttle reported (s) |")
    print("|---|---:|---:|---:|")
    for side, r in results.items():
        print(f"| {side} | {r['rate']:,.0f} | {r['ratio']:.2f} | {r['throttle_s']:.1f} |")


if __name__ == "__main__":
    main()
