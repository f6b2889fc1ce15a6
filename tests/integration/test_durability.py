"""Nothing acknowledged is lost: kill -9 the broker during continuous commits."""

from __future__ import annotations

import threading

import pytest

from tests.integration.clients import ConsumerThread, create_topic, produce_keyed, wait_for
from tests.integration.waits import hold

pytestmark = pytest.mark.integration


def _committer(bootstrap: str, acked: dict, sent: dict, stop: threading.Event,
               topic: str = "t", count: int = 3, group: str = "durable") -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             request_timeout_ms=3000)
    partitions = [TopicPartition(topic, p) for p in range(count)]
    consumer.assign(partitions)
    n = 0
    try:
        while not stop.is_set():
            n += 1
            offsets = {tp: OffsetAndMetadata(n * 10 + tp.partition, "", -1) for tp in partitions}
            for tp in partitions:
                sent[tp.partition] = n * 10 + tp.partition
            consumer.commit(offsets)     # raises once the broker is gone
            for tp in partitions:
                acked[tp.partition] = n * 10 + tp.partition
    except Exception:
        pass
    finally:
        try:
            consumer.close(autocommit=False)
        except Exception:
            pass


def _kill_9_mid_commits(broker, topic: str, count: int, group: str, enough, what: str) -> None:
    """Commit `count` partitions of `topic` over and over, kill -9 the broker once `enough(acked)`
    holds, restart it: every answered commit is there, at most the one in flight went further."""
    from kafka import KafkaConsumer, TopicPartition
    create_topic(broker.bootstrap, topic, count)
    acked: dict[int, int] = {}
    sent: dict[int, int] = {}
    stop = threading.Event()
    worker = threading.Thread(target=_committer, args=(broker.bootstrap, acked, sent, stop, topic, count, group),
                              daemon=True)
    worker.start()
    wait_for(lambda: enough(acked), timeout=120, what=what)
    broker.kill9()                              # mid-stream, no warning
    stop.set()
    worker.join(30)
    last_acked = dict(acked)
    broker.start()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        for p in range(count):
            committed = consumer.committed(TopicPartition(topic, p))
            assert committed is not None
            assert last_acked[p] <= committed <= sent[p], (p, last_acked[p], committed, sent[p])
    finally:
        consumer.close()


def test_acknowledged_commits_survive_kill_9_and_the_group_resumes(broker):
    _kill_9_mid_commits(broker, "t", 3, "durable", lambda acked: len(acked) == 3 and min(acked.values()) > 200,
                        "some commits")


def test_group_offsets_survive_kill_9_and_the_live_group_resumes(broker):
    create_topic(broker.bootstrap, "orders", 2)
    produce_keyed(broker.bootstrap, "orders", 1_000)
    member = ConsumerThread("kafka-python", broker.bootstrap, "resume", "orders", "member")
    member.start()
    wait_for(lambda: len(member.tally.consumed) >= 1_000, timeout=60, what="first pass")
    member.commit_now()
    broker.kill9()                              # the broker dies under a live member
    broker.start()
    produce_keyed(broker.bootstrap, "orders", 100)
    # The same member carries on after the restart (its group was reloaded, Stable).
    wait_for(lambda: len(member.tally.consumed) >= 1_100, timeout=60, what="member resumes")
    member.stop(commit=False)
    assert member.tally.error is None
    # A new member starts from what was committed before the kill: only the new 100.
    second = ConsumerThread("kafka-python", broker.bootstrap, "resume", "orders", "second")
    second.start()
    wait_for(lambda: len(second.tally.consumed) >= 100, timeout=60, what="second member")
    hold(1, "a record beyond the new 100 would arrive by now")
    second.stop(commit=False)
    assert len(second.tally.consumed) == 100


def test_acknowledged_commits_survive_kill_9_while_the_group_log_snapshots_and_rolls(broker):
    # 1,000 offsets a commit, all in one group's shard: a snapshot (and with it a new log
    # segment, and old segments deleted) every 10,000 records, so the kill lands among them.
    _kill_9_mid_commits(broker, "wide", 1000, "rolling", lambda acked: broker.log().count("snapshot of") >= 3,
                        "three snapshots of the group log")
