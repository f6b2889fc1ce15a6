"""A kafka-python consumer in its own process, so a test can SIGKILL it.

Prints one JSON line per event: {"event": "assigned", "partitions": [...], "generation": N}, and
{"event": "fenced"} / {"event": "error", ...} when the coordinator fences it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time


def main() -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    from kgroup.testing.kafka_python_pending_join import count_pending_join_as_rejoin

    bootstrap, group, topic = sys.argv[1:4]
    instance = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
    session_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 6000

    def say(**event) -> None:
        print(json.dumps(event), flush=True)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            say(event="revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned):
            # The generation this assignment belongs to (kafka-python sets it before the
            # callback), so a test can tell a static rejoin from a rebalance.
            generation = consumer._coordinator._generation.generation_id
            say(event="assigned", partitions=sorted(tp.partition for tp in assigned), generation=generation)

    class FencedWatcher(logging.Handler):
        """kafka-python reports a fenced heartbeat as an error log, not an exception."""

        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if "fenced" in message.lower():
                say(event="fenced", error=message)

    watcher = FencedWatcher(logging.ERROR)
    logging.getLogger("kafka").addHandler(watcher)
    logging.getLogger("kafka").setLevel(logging.ERROR)

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance,
                             session_timeout_ms=session_ms, heartbeat_interval_ms=1000,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             client_id=instance or "proc")
    count_pending_join_as_rejoin(consumer)
    consumer.subscribe([topic], listener=Listener())
    parent = os.getppid()
    deadline = time.monotonic() + 180  # never outlive a test run, even an aborted one
    try:
        while os.getppid() == parent and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
    except Exception as exc:  # kafka-python raises the fencing error from poll
        kind = "fenced" if "Fenced" in type(exc).__name__ or "FENCED" in str(exc).upper() else "error"
        say(event=kind, error=f"{type(exc).__name__}: {exc}")
        sys.exit(3)


if __name__ == "__main__":
    main()
