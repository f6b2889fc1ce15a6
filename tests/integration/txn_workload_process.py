"""Transactions without end while the broker is killed under them, in its own process.

    python -m tests.integration.txn_workload_process BOOTSTRAP OUTPUT INPUT OUTCOMES

confluent-kafka, transactional id `workload`, transaction timeout 5 s. Transaction n writes
the five records "n-0" .. "n-4" to OUTPUT (spread over its partitions); every second one
also commits offset n of INPUT-0 for the group "workload"; one in three is aborted. When
commit_transaction (or abort_transaction) returns, the line "C n" (or "A n") is appended to
OUTCOMES: the test checks each against what read_committed shows. A transaction whose end
the client never heard (an error on the way) gets no line and may have gone either way, but
all or nothing. A retriable error is retried; one that needs an abort aborts; a fatal one
(the producer was fenced or lost its state) starts a new producer, as an application would.
"""

from __future__ import annotations

import os
import sys
import time
from tests.integration.waits import pace


def main() -> int:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    bootstrap, sink, source, outcomes_path = sys.argv[1:5]
    outcomes = open(outcomes_path, "a", buffering=1)
    parent = os.getppid()
    deadline = time.monotonic() + 300                  # never outlive a test run

    def new_producer() -> Producer:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "workload",
                      "transaction.timeout.ms": 5000, "linger.ms": 5})
        while True:
            try:
                p.init_transactions(30)
                return p
            except KafkaException as exc:
                if not exc.args[0].retriable():
                    raise
                pace(0.2)

    def finish(call, *args) -> bool:
        """Retry a commit or an abort while the error is retriable; True once it returned."""
        while True:
            try:
                call(*args)
                return True
            except KafkaException as exc:
                if exc.args[0].retriable():
                    pace(0.1)
                    continue
                raise

    # send_offsets_to_transaction takes a consumer's group metadata; one that never joins
    # commits as a "simple" member (generation -1).
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "workload"}).consumer_group_metadata()
    producer = new_producer()
    n = 0
    while os.getppid() == parent and time.monotonic() < deadline:
        n += 1
        commit = n % 3 != 0
        try:
            producer.begin_transaction()
            for i in range(5):
                producer.produce(sink, f"{n}-{i}".encode(), partition=(n + i) % 3)
            if n % 2 == 0:
                producer.send_offsets_to_transaction([TopicPartition(source, 0, n)], group, 30)
            if commit:
                finish(producer.commit_transaction, 30)
            else:
                finish(producer.abort_transaction, 30)
            outcomes.write(f"{'C' if commit else 'A'} {n}\n")
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                try:
                    finish(producer.abort_transaction, 30)
                    outcomes.write(f"A {n}\n")
                except KafkaException:
                    producer = new_producer()
            else:
                # Fatal (fenced, or the producer's state was lost): a new producer's
                # InitProducerId ends whatever this one left open.
                producer = new_producer()
        pace(0.01)
    return 0


if __name__ == "__main__":
    sys.exit(main())
