"""What the Java, Go and CLI clients showed, fixed in kgroup: each fix with a test of its own
at the wire, next to the client scenario that found it (named in each docstring)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kgroup.client.connection import Connection
from kgroup.wire.kio_build import build, item

pytestmark = pytest.mark.integration


def _run(coro):
    return asyncio.run(coro)


async def _request(bootstrap: str, api_key: int, version: int, fill):
    host, port = bootstrap.rsplit(":", 1)
    conn = await Connection.open(host, int(port))
    try:
        return await conn.request(api_key, fill, version=version)
    finally:
        await conn.close()


def test_metadata_by_topic_id_with_an_empty_name(kgroup, name):
    """Java's KafkaConsumer subscribed with a SubscriptionPattern (a broker-side regex) learns
    its topics by id: Metadata v12+ with the id set and the name left "" (the generated
    request's default). Kafka resolves such a request by id; kgroup answered the name ""
    INVALID_TOPIC_EXCEPTION, so the consumer never reconciled its assignment
    (test_java_clients.py::test_java_consumer_protocol_regex_subscription_picks_up_new_topics)."""
    kgroup.create_topic(f"by-id-{name}", 2)

    def ask(ids):
        def fill(cls):
            topic = item(cls, "topics")
            return build(cls, topics=tuple(build(topic, topic_id=i, name="") for i in ids),
                         allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        return _run(_request(kgroup.bootstrap, 3, 12, fill))

    everything = _run(_request(kgroup.bootstrap, 3, 12, lambda cls: build(
        cls, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)))
    known = next(t.topic_id for t in everything.topics if t.name == f"by-id-{name}")
    unknown = uuid.uuid4()
    [found, missing] = ask([known, unknown]).topics
    assert (found.error_code, found.name, len(found.partitions)) == (0, f"by-id-{name}", 2)
    assert (missing.error_code, missing.topic_id) == (100, unknown)          # UNKNOWN_TOPIC_ID
