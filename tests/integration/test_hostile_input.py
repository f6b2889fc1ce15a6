"""Hostile bytes never crash or hang the broker, and a well-behaved consumer keeps working."""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import ConsumerThread, create_topic, produce_keyed, wait_for

pytestmark = pytest.mark.integration


def _valid_frames() -> list[bytes]:
    """A few well-formed requests (our encoder is byte-checked against kafka-python's)."""
    from kgroup.wire.kio_build import build, item
    from kgroup.wire import encode_request, request_class

    join = request_class(11, 5)
    requests = [
        (18, 0, build(request_class(18, 0))),
        (3, 1, build(request_class(3, 1), topics=None)),
        (12, 0, build(request_class(12, 0), group_id="g", generation_id=1, member_id="m")),
        (11, 5, build(join, group_id="g", session_timeout=6000, rebalance_timeout=6000, member_id="",
                      group_instance_id=None, protocol_type="consumer",
                      protocols=(build(item(join, "protocols"), name="range", metadata=b"\x00\x00"),))),
    ]
    return [encode_request(key, version, i, "fuzz", req) for i, (key, version, req) in enumerate(requests)]


VALID = _valid_frames()


def _mutate(data: bytes, draw) -> bytes:
    kind = draw(st.sampled_from(["flip", "truncate", "garbage-after", "length", "api-key", "version"]))
    buf = bytearray(data)
    if kind == "flip":
        for pos in draw(st.lists(st.integers(0, len(buf) - 1), min_size=1, max_size=4)):
            buf[pos] ^= draw(st.integers(1, 255))
    elif kind == "truncate":
        cut = draw(st.integers(4, len(buf) - 1))
        body = bytes(buf[4:cut])
        return struct.pack(">i", len(body)) + body
    elif kind == "garbage-after":
        return bytes(buf) + draw(st.binary(min_size=1, max_size=64))
    elif kind == "length":
        buf[0:4] = struct.pack(">i", draw(st.sampled_from([-1, 0, 3, 2**31 - 1, 100 * 1024 * 1024 + 1])))
    elif kind == "api-key":
        buf[4:6] = struct.pack(">h", draw(st.sampled_from([-1, 99, 1000, 32767, 68, 69])))
    else:
        buf[6:8] = struct.pack(">h", draw(st.sampled_from([-1, 17, 99, 32767])))
    return bytes(buf)


@st.composite
def hostile(draw):
    if draw(st.booleans()):
        return draw(st.binary(min_size=0, max_size=256))
    return _mutate(draw(st.sampled_from(VALID)), draw)


@pytest.fixture
def live(tmp_path):
    proc = BrokerProcess(tmp_path / "data").start()
    create_topic(proc.bootstrap, "steady", 2)
    consumer = ConsumerThread("kafka-python", proc.bootstrap, "steady-group", "steady", "steady")
    consumer.start()
    yield proc, consumer
    consumer.stop(commit=False)
    assert proc.stop() == 0, proc.log()


def _send(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.settimeout(2)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except (socket.timeout, ConnectionError):
            pass  # a closed or silent connection is a fine answer to garbage


PROBE_EVERY = 25  # examples between two checks that the steady consumer still consumes


def test_hostile_frames_never_crash_or_hang_the_broker_and_a_consumer_keeps_working(live):
    from confluent_kafka import Producer

    proc, consumer = live
    wait_for(lambda: consumer.tally.assigned == {0, 1}, timeout=60, what="steady consumer owns both partitions")
    joined = len(consumer.tally.events)
    producer = Producer({"bootstrap.servers": proc.bootstrap})
    sent = 0
    examples = 0

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=hostile())
    def fuzz(data):
        nonlocal sent, examples
        _send(proc.port, data)
        assert proc.alive(), proc.log()
        # The broker still answers a well-formed request at once.
        with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as s:
            s.sendall(VALID[0])
            assert len(s.recv(4)) == 4
        examples += 1
        if examples % PROBE_EVERY == 0:
            # Throughout the fuzz, not only after it: a record produced now is consumed now.
            producer.produce("steady", key=str(sent).encode(), value=b"probe")
            assert producer.flush(10) == 0
            sent += 1
            wait_for(lambda: len(consumer.tally.consumed) >= sent, timeout=20,
                     what=f"steady consumer to read probe {sent} (after {examples} hostile frames)")

    fuzz()
    assert sent >= 300 // PROBE_EVERY
    assert consumer.tally.error is None, consumer.tally.error
    # It kept its membership: the fuzz never made the group take a partition away from it.
    revoked = [p for _, kind, p in consumer.tally.events[joined:] if kind == "revoked" and p]
    assert revoked == [] and consumer.tally.assigned == {0, 1}
    assert "Traceback" not in proc.log(), proc.log()
