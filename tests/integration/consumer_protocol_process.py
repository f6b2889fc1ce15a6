"""A confluent-kafka consumer on the consumer protocol (KIP-848) in its own process.

Prints one JSON line per rebalance callback, so a test can SIGKILL it and watch.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    from confluent_kafka import Consumer

    bootstrap, group, topic = sys.argv[1:4]

    def say(**event) -> None:
        print(json.dumps(event), flush=True)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "client.id": "proc"})
    consumer.subscribe([topic],
                       on_assign=lambda c, ps: say(event="assigned", partitions=sorted(p.partition for p in ps)),
                       on_revoke=lambda c, ps: say(event="revoked", partitions=sorted(p.partition for p in ps)))
    parent = os.getppid()
    deadline = time.monotonic() + 180
    while os.getppid() == parent and time.monotonic() < deadline:
        consumer.poll(0.2)


if __name__ == "__main__":
    main()
