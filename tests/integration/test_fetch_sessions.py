"""Fetch sessions (KIP-227) with real clients against a real `kgroup serve`.

kafka-python opens a fetch session with its first (full) fetch and from then on sends
incremental ones: only the partitions whose position moved, the ones it stopped fetching in
`forgotten_topics_data`, and it rebuilds the answer from the partitions the broker leaves out.
A broker that answered wrongly would make it lose or repeat records, or fall back to full
fetches (its session handler refuses an answer with partitions outside the session).
librdkafka (confluent-kafka) and aiokafka fetch sessionless (session id 0, epoch -1): they
must read the same while the broker holds other clients' sessions.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import ConsumerThread, create_topic
from tests.integration.waits import hold, wait_for

pytestmark = pytest.mark.integration

PARTITIONS = 4


def produce_wave(bootstrap: str, topic: str, wave: int, per_partition: int,
                 partitions: range = range(PARTITIONS)) -> dict[int, list[bytes]]:
    """`per_partition` records on each partition (acks=all); their values by partition."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    sent: dict[int, list[bytes]] = {}
    for p in partitions:
        for i in range(per_partition):
            value = f"w{wave}-p{p}-{i}".encode()
            producer.produce(topic, value=value, partition=p)
            sent.setdefault(p, []).append(value)
    assert producer.flush(30) == 0
    return sent


class SessionAnswers:
    """What kafka-python's FetchSessionHandler made of each Fetch answer: (full request,
    accepted, session id, partitions in the answer, partitions in the session)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from kafka.consumer.fetcher import FetchSessionHandler

        self.seen: list[tuple[bool, bool, int, int, int]] = []
        self.lock = threading.Lock()
        original = FetchSessionHandler.handle_response
        answers = self

        def handle_response(handler, response):
            full = handler.next_metadata.is_full
            size = len(handler.session_partitions)
            ok = original(handler, response)
            answered = sum(len(t.partitions) for t in response.responses)
            with answers.lock:
                answers.seen.append((full, ok, int(response.session_id), answered, size))
            return ok

        monkeypatch.setattr(FetchSessionHandler, "handle_response", handle_response)

    def incremental(self) -> list[tuple[bool, bool, int, int, int]]:
        with self.lock:
            return [s for s in self.seen if not s[0]]


def test_kip227_kafka_python_reads_everything_through_incremental_fetches(broker: BrokerProcess, monkeypatch):
    from kafka import KafkaConsumer, TopicPartition

    answers = SessionAnswers(monkeypatch)
    topic = f"sessions-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100, client_id="kip227-kafka-python")
    read: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}

    def poll_until(want: dict[int, int], what: str) -> None:
        def done() -> bool:
            for tp, records in consumer.poll(timeout_ms=100).items():
                read[tp.partition].extend(r.value for r in records)
            return all(len(read[p]) >= n for p, n in want.items())
        wait_for(done, timeout=30, what=what)

    def add(more: dict[int, list[bytes]]) -> None:
        for p, values in more.items():
            sent[p].extend(values)

    try:
        consumer.assign(tps)
        # 1. A wave on every partition: the session's first answers carry records.
        add(produce_wave(broker.bootstrap, topic, 1, 20))
        poll_until({p: len(sent[p]) for p in sent}, "the first wave is read")
        # 2. Records on one partition only: the other three have nothing new and are left out.
        add(produce_wave(broker.bootstrap, topic, 2, 5, range(2, 3)))
        poll_until({p: len(sent[p]) for p in sent}, "the second wave is read")
        # 3. Partition 0 paused: the session forgets it; records there wait, the rest flow.
        consumer.pause(tps[0])
        add(produce_wave(broker.bootstrap, topic, 3, 7))
        poll_until({p: len(sent[p]) for p in sent if p != 0}, "the third wave is read but for partition 0")
        assert len(read[0]) == 20
        # 4. Resumed: added to the session again at its position; nothing lost, nothing twice.
        consumer.resume(tps[0])
        add(produce_wave(broker.bootstrap, topic, 4, 3))
        poll_until({p: len(sent[p]) for p in sent}, "everything is read")
        hold(0.5, "a record read twice would arrive by now")
        for tp, records in consumer.poll(timeout_ms=300).items():
            read[tp.partition].extend(r.value for r in records)
    finally:
        consumer.close()

    assert read == sent
    incremental = answers.incremental()
    assert all(ok for _, ok, _, _, _ in answers.seen), [s for s in answers.seen if not s[1]][:5]
    sessions = {sid for _, _, sid, _, _ in incremental}
    assert len(sessions) == 1 and 0 not in sessions, sessions
    assert len(incremental) >= 4, answers.seen[:20]
    # Incremental answers left out partitions with nothing new.
    assert any(answered < size for _, _, _, answered, size in incremental)


def test_kip227_every_client_reads_everything_while_sessions_come_and_go(broker: BrokerProcess, monkeypatch):
    """Two kafka-python members share a group (the second's join takes partitions from the
    first, whose session forgets them), while librdkafka and aiokafka read the topic in
    groups of their own, sessionless; records keep arriving throughout."""
    answers = SessionAnswers(monkeypatch)
    topic = f"sessions-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}

    def add(more: dict[int, list[bytes]]) -> None:
        for p, values in more.items():
            sent[p].extend(values)

    add(produce_wave(broker.bootstrap, topic, 1, 10))
    first = ConsumerThread("kafka-python", broker.bootstrap, f"{topic}-kp", topic, "kp-a", fetch_max_wait_ms=100)
    others = [ConsumerThread("confluent-kafka", broker.bootstrap, f"{topic}-rd", topic, "rd",
                             **{"fetch.wait.max.ms": 100}),
              ConsumerThread("aiokafka", broker.bootstrap, f"{topic}-aio", topic, "aio", fetch_max_wait_ms=100)]
    second = ConsumerThread("kafka-python", broker.bootstrap, f"{topic}-kp", topic, "kp-b", fetch_max_wait_ms=100)
    threads = [first, *others]
    try:
        for t in threads:
            t.start()
        wait_for(lambda: len(first.tally.consumed) >= 40, timeout=30, what="the first member reads the first wave")
        add(produce_wave(broker.bootstrap, topic, 2, 10))
        second.start()
        threads.append(second)
        wait_for(lambda: first.tally.assigned and second.tally.assigned
                 and not first.tally.assigned & second.tally.assigned,
                 timeout=30, what="the group splits the partitions")
        add(produce_wave(broker.bootstrap, topic, 3, 10))
        add(produce_wave(broker.bootstrap, topic, 4, 10))

        def values(tallies) -> dict[int, set[bytes]]:
            got: dict[int, set[bytes]] = {p: set() for p in range(PARTITIONS)}
            for tally in tallies:
                for p, _, _, value in list(tally.consumed):
                    got[p].add(value)
            return got

        want = {p: set(v) for p, v in sent.items()}
        wait_for(lambda: values([first.tally, second.tally]) == want, timeout=60,
                 what="the kafka-python group reads every record")
        for other in others:
            wait_for(lambda: values([other.tally]) == want, timeout=60, what=f"{other.name} reads every record")
    finally:
        for t in threads:
            t.stop(commit=False)
    for t in threads:
        assert t.tally.error is None, f"{t.name}: {t.tally.error!r}"
    # Each sessionless reader got every record once, in order on each partition.
    for other in others:
        for p in range(PARTITIONS):
            assert [v for q, _, _, v in other.tally.consumed if q == p] == sent[p], (other.name, p)
    # The kafka-python members read through incremental fetches, none of them refused.
    assert len(answers.incremental()) >= 4 and all(ok for _, ok, _, _, _ in answers.seen)
