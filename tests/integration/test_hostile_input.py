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


def _fuzz_while_a_consumer_consumes(proc, consumer, producer, strategy, examples_wanted: int) -> None:
    """Send `examples_wanted` hostile byte strings from `strategy`; after each the broker
    answers a well-formed request at once, and every PROBE_EVERY examples a record produced
    now is consumed now by the steady consumer, which keeps its partitions throughout."""
    wait_for(lambda: consumer.tally.assigned == {0, 1}, timeout=60, what="steady consumer owns both partitions")
    joined = len(consumer.tally.events)
    sent = 0
    examples = 0

    @settings(max_examples=examples_wanted, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=strategy)
    def fuzz(data):
        nonlocal sent, examples
        _send(proc.port, data)
        assert proc.alive(), proc.log()
        with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as s:
            s.sendall(VALID[0])  # ApiVersions: answered even before authentication
            assert len(s.recv(4)) == 4
        examples += 1
        if examples % PROBE_EVERY == 0:
            producer.produce("steady", key=str(sent).encode(), value=b"probe")
            assert producer.flush(10) == 0
            sent += 1
            wait_for(lambda: len(consumer.tally.consumed) >= sent, timeout=20,
                     what=f"steady consumer to read probe {sent} (after {examples} hostile inputs)")

    fuzz()
    assert sent >= examples_wanted // PROBE_EVERY
    assert consumer.tally.error is None, consumer.tally.error
    # It kept its membership: the fuzz never made the group take a partition away from it.
    revoked = [p for _, kind, p in consumer.tally.events[joined:] if kind == "revoked" and p]
    assert revoked == [] and consumer.tally.assigned == {0, 1}
    assert "Traceback" not in proc.log(), proc.log()


def test_hostile_frames_never_crash_or_hang_the_broker_and_a_consumer_keeps_working(live):
    from confluent_kafka import Producer

    proc, consumer = live
    _fuzz_while_a_consumer_consumes(proc, consumer, Producer({"bootstrap.servers": proc.bootstrap}), hostile(), 300)


# ---- the SASL path -------------------------------------------------------------------------

SASL_USER, SASL_PASSWORD = "steady", "steady-Pa55"


@pytest.fixture
def sasl_live(tmp_path):
    from tests.integration.broker_process import free_port
    from tests.integration.security_setup import add_user_offline, library_options

    port = free_port()
    add_user_offline(tmp_path / "data", SASL_USER, SASL_PASSWORD, "SCRAM-SHA-512")
    tables = (f'[[listeners]]\nname = "SASL"\naddress = "127.0.0.1:{port}"\nprotocol = "SASL_PLAINTEXT"\n'
              'sasl_mechanisms = ["SCRAM-SHA-512", "PLAIN"]\n'
              f'[auth]\nauthorizer = true\nsuper_users = ["User:{SASL_USER}"]\n')
    proc = BrokerProcess(tmp_path / "data", tables=tables, port=port, listen=False).start()
    consumer = None
    try:
        options = library_options("confluent-kafka", "SASL_PLAINTEXT", "SCRAM-SHA-512", SASL_USER, SASL_PASSWORD)
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": proc.bootstrap, **options})
        admin.create_topics([NewTopic("steady", 2)])["steady"].result(10)
        consumer = ConsumerThread("kafka-python", proc.bootstrap, "steady-group", "steady", "steady",
                                  **library_options("kafka-python", "SASL_PLAINTEXT", "SCRAM-SHA-512", SASL_USER,
                                                    SASL_PASSWORD))
        consumer.start()
        yield proc, consumer, options
    finally:
        if consumer is not None:
            consumer.stop(commit=False)
        assert proc.stop() == 0, proc.log()


class _Raw:
    """One raw connection: send kio requests, read decoded responses or the close."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.corr = 0

    def send_frame(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def request(self, api: int, version: int, **fields):
        from kgroup.wire import encode_request, request_class
        from kgroup.wire.kio_build import build

        self.corr += 1
        self.sock.sendall(encode_request(api, version, self.corr, "hostile", build(request_class(api, version), **fields)))
        return self.response(api, version)

    def response(self, api: int, version: int):
        from kgroup.wire import decode_response

        head = self._exactly(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return decode_response(api, version, self._exactly(size))[1]

    def _exactly(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def closed(self) -> bool:
        """The broker closed the connection (EOF, or reset) without sending anything more."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionError:
            return True

    def close(self) -> None:
        self.sock.close()


def _scram_first_two(raw: _Raw, user: str, password: str):
    from kgroup.wire.scram import ScramClient

    assert int(raw.request(17, 1, mechanism="SCRAM-SHA-512").error_code) == 0
    client = ScramClient("sha512", user, password, "hostilenonce")
    first = raw.request(36, 2, auth_bytes=client.first())
    assert int(first.error_code) == 0
    return client, bytes(first.auth_bytes)


def test_hostile_authentication_gets_a_clear_error_and_a_closed_connection(sasl_live):
    proc, consumer, _ = sasl_live
    wait_for(lambda: consumer.tally.assigned == {0, 1}, timeout=60, what="steady consumer over SASL owns both")
    port = proc.port

    # Wrong password (PLAIN): SASL_AUTHENTICATION_FAILED with a reason, then the close.
    raw = _Raw(port)
    assert int(raw.request(18, 3, client_software_name="h", client_software_version="1").error_code) == 0
    assert int(raw.request(17, 1, mechanism="PLAIN").error_code) == 0
    refused = raw.request(36, 2, auth_bytes=f"\0{SASL_USER}\0Wr0ng-Pa55".encode())
    assert int(refused.error_code) == 58 and "Invalid username or password" in refused.error_message
    assert raw.closed()

    # SCRAM with a nonce that is not the server's, and with a bad proof.
    for mutate in (lambda f: f.replace(b"r=hostilenonce", b"r=hostilenonceXX"),
                   lambda f: f.rsplit(b",p=", 1)[0] + b",p=AAAA"):
        raw = _Raw(port)
        client, server_first = _scram_first_two(raw, SASL_USER, SASL_PASSWORD)
        final = raw.request(36, 2, auth_bytes=mutate(client.final(server_first)))
        assert int(final.error_code) == 58 and raw.closed()

    # A SCRAM client-first without a nonce; a mechanism the listener does not enable.
    raw = _Raw(port)
    assert int(raw.request(17, 1, mechanism="SCRAM-SHA-512").error_code) == 0
    assert int(raw.request(36, 1, auth_bytes=b"n,,n=steady").error_code) == 58 and raw.closed()
    raw = _Raw(port)
    answer = raw.request(17, 1, mechanism="SCRAM-SHA-256")
    assert int(answer.error_code) == 33 and list(answer.mechanisms) == ["SCRAM-SHA-512", "PLAIN"] and raw.closed()

    # Requests before authentication: Metadata is dropped unanswered; SaslAuthenticate before
    # SaslHandshake gets ILLEGAL_SASL_STATE; both close the connection.
    raw = _Raw(port)
    raw.send_frame(VALID[1])  # Metadata v1
    assert raw.closed()
    raw = _Raw(port)
    early = raw.request(36, 2, auth_bytes=b"\0a\0b")
    assert int(early.error_code) == 34 and raw.closed()

    # An oversized frame before authentication is refused at its size; a truncated one is
    # just a connection that went away.
    raw = _Raw(port)
    raw.send_frame(struct.pack(">i", 600_000) + b"\x00\x11")
    assert raw.closed()
    _send(port, struct.pack(">i", 100) + VALID[0][4:14])

    # A correct login still works, and the steady consumer never noticed.
    raw = _Raw(port)
    client, server_first = _scram_first_two(raw, SASL_USER, SASL_PASSWORD)
    done = raw.request(36, 2, auth_bytes=client.final(server_first))
    assert int(done.error_code) == 0
    client.verify(bytes(done.auth_bytes))
    assert int(raw.request(18, 3, client_software_name="h", client_software_version="1").error_code) == 0
    raw.close()
    log = proc.log()
    for reason in ("Invalid username or password", "nonce does not match", "client proof has the wrong length",
                   "sent before SASL authentication", "600000", "mechanism 'SCRAM-SHA-256' is not enabled"):
        assert reason in log, reason
    assert "Wr0ng-Pa55" not in log and SASL_PASSWORD not in log
    assert consumer.tally.error is None and consumer.tally.assigned == {0, 1}


@st.composite
def sasl_hostile(draw):
    """A SASL exchange gone wrong: junk tokens after a handshake, or junk before it."""
    from kgroup.wire import encode_request, request_class
    from kgroup.wire.kio_build import build

    mech = draw(st.sampled_from(["PLAIN", "SCRAM-SHA-512"]))
    handshake = encode_request(17, 1, 1, "fuzz", build(request_class(17, 1), mechanism=mech))
    token = draw(st.one_of(st.binary(max_size=300), st.sampled_from([
        b"n,,n=steady,r=" + b"\xff" * 5, b"n,,n==,r=x", b"\0steady\0", b"\0" * 3, b"n,,n=steady,r=a,tokenauth=true"])))
    version = draw(st.integers(0, 2))
    auth = encode_request(36, version, 2, "fuzz", build(request_class(36, version), auth_bytes=token))
    kind = draw(st.sampled_from(["token", "mutated-handshake", "mutated-token", "token-first"]))
    if kind == "token":
        return handshake + auth
    if kind == "token-first":
        return auth + handshake
    if kind == "mutated-handshake":
        return _mutate(handshake, draw) + auth
    return handshake + _mutate(auth, draw)


def test_hostile_sasl_exchanges_never_crash_or_hang_the_broker(sasl_live):
    from confluent_kafka import Producer

    proc, consumer, options = sasl_live
    producer = Producer({"bootstrap.servers": proc.bootstrap, **options})
    _fuzz_while_a_consumer_consumes(proc, consumer, producer, sasl_hostile(), 200)
