"""The reference broker itself: Apache Kafka 4.4 starts from the repo's own jars, serves a
real client, and answers ApiVersions the way its version should."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Consumer, Producer

from kgroup.client.connection import Connection

pytestmark = pytest.mark.integration


def _api_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    host, port = bootstrap.rsplit(":", 1)

    async def ask() -> dict[int, tuple[int, int]]:
        conn = await Connection.open(host, int(port))
        try:
            return dict(conn.broker_versions)
        finally:
            await conn.close()

    return asyncio.run(ask())


def test_the_reference_is_kafka_4_4_with_streams_and_share_groups(kafka_reference):
    versions = _api_versions(kafka_reference.bootstrap)
    # StreamsGroupHeartbeat (88) and ShareGroupHeartbeat (76) exist only in 4.x brokers that
    # have the features on; OffsetCommit v10 (topic ids) arrived in 4.x as well.
    assert 88 in versions and 76 in versions
    assert versions[8][1] >= 10


def test_a_record_produced_to_the_reference_is_consumed_in_a_group(kafka_reference):
    topic, group = f"ref-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": kafka_reference.bootstrap})
    producer.produce(topic, b"hello")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_reference.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        message = None
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.value() == b"hello"
    finally:
        consumer.close()


def test_a_tool_run_twice_maps_the_class_archive_its_first_run_wrote(kafka_reference):
    """run_java's class-data-sharing archive (src/kgroup/testing/reference.py): the first run
    of a tool writes it, the next one uses it and prints the same as a run without it."""
    from kgroup.testing.reference import class_archive, java_command, run_java

    main = "org.apache.kafka.tools.TopicCommand"
    archive = class_archive(java_command(), main)
    assert archive is not None
    args = ("--bootstrap-server", kafka_reference.bootstrap, "--list")
    first = run_java(main, *args)
    assert first.returncode == 0, first.stderr
    assert archive.is_file() and archive.stat().st_size > 1 << 20
    second = run_java(main, *args, jvm_options=("-Xlog:cds=info",))   # after ours: says what it mapped
    assert second.returncode == 0, second.stderr
    assert "Opened archive" in second.stdout and str(archive) in second.stdout, second.stdout[-2000:]
    listed = [line for line in second.stdout.splitlines() if not line.startswith("[")]
    assert listed == first.stdout.splitlines()
