"""A consume-transform-produce application with exactly-once delivery (KIP-447), in its own
process so a test can SIGKILL it at any point.

    python -m tests.integration.eos_app_process BOOTSTRAP GROUP SLOT INPUT OUTPUT

confluent-kafka: a read_committed consumer in GROUP (static member `slot-SLOT`) and a
transactional producer (`eos-SLOT`). Each loop reads up to 10 records, writes one output per
input (key "partition:offset" of the input, value upper-cased) and commits the consumer's
positions in the same transaction, fenced by the group metadata. A transaction the group or
the coordinator refuses is aborted and the consumer rewinds to the committed offsets; a
fenced producer exits (status 3): a newer instance of the slot took over. A restarted
instance of the slot fences the old producer (same transactional id) and takes its place in
the group at once (same instance id).
"""

from __future__ import annotations

import os
import sys
import time
from tests.integration.waits import pace


def main() -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

    bootstrap, group, slot, source, sink = sys.argv[1:6]
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": f"slot-{slot}",
        "isolation.level": "read_committed", "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "group.protocol": "classic",
    })
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"eos-{slot}", "linger.ms": 5,
                         "transaction.timeout.ms": 10_000})
    producer.init_transactions(60)
    # What the group gives and takes, and every error the consumer hands back, go to the log:
    # a test that finds the app stalled then says whether it lost its partitions or kept
    # getting an error (consume() hands errors back as messages, skipped below).
    def said(what: str):
        return lambda _, partitions: print(f"{what}: {sorted((p.topic, p.partition) for p in partitions)}",
                                           flush=True)
    consumer.subscribe([source], on_assign=said("assigned"), on_revoke=said("revoked"), on_lost=said("lost"))
    parent = os.getppid()
    deadline = time.monotonic() + 300                  # never outlive a test run

    def rewind() -> None:
        assigned = consumer.assignment()
        if not assigned:
            return
        for tp in consumer.committed(assigned, 30):
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))

    while os.getppid() == parent and time.monotonic() < deadline:
        msgs = []
        for m in consumer.consume(num_messages=10, timeout=0.5):
            if m.error() is None:
                msgs.append(m)
            else:
                print(f"consumer error: {m.error()}", flush=True)
        if not msgs:
            continue
        producer.begin_transaction()
        try:
            for m in msgs:
                producer.produce(sink, key=f"{m.partition()}:{m.offset()}".encode(), value=m.value().upper())
            # The outputs are in the log while the transaction stays open a little (the work
            # an application does between its sends), so kills land there too.
            producer.flush(30)
            pace(0.05)
            positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal():
                print(f"fatal: {error}", flush=True)
                return 3
            if not error.txn_requires_abort():
                raise
            print(f"aborting: {error}", flush=True)
            producer.abort_transaction(30)
            rewind()
    return 0


if __name__ == "__main__":
    sys.exit(main())
