"""SaslHandshake v0 and its unframed exchange, with the librdkafka that needs it.

librdkafka releases before its KAFKA-18270 fix (Debian's kcat 1.7.1 is built on librdkafka
2.0.2; older confluent-kafka and node-rdkafka too) refuse a broker whose SaslHandshake
range lacks v0: "SASL Handshake not supported by broker". Kafka 4.x still advertises v0-1,
and serves v0's exchange: after a v0 handshake the client sends each SASL message as a bare
length-prefixed frame -- no request header -- and gets the server's message back the same
way; a failed exchange closes the connection (v0 has nowhere to put an error).

SCRAM with this librdkafka also needs the server to let its client-final nonce through
(librdkafka#4895, wire/scram.py): Kafka 4.4 itself refuses it, so these SCRAM cases pass on
kgroup and fail on the reference Kafka -- kgroup is deliberately kinder here.

kcat (installed by `make kcat`, a dependency of `make test`) authenticates here with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 over SASL_PLAINTEXT and SASL_SSL, produces a record and
reads it back; a wrong password is refused at once. The unframed exchange itself (which
kcat does not use when the broker offers SaslAuthenticate) is driven over a raw socket,
PLAIN and SCRAM, on both listeners.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import socket
import ssl
import struct
import subprocess
import uuid

import pytest

from kgroup.wire import decode_response, encode_request, request_class
from kgroup.wire.kio_build import build
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.security_setup import add_user_offline, make_certs

pytestmark = pytest.mark.integration
KCAT = shutil.which("kcat")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
USER, PASSWORD = "kcat-user", "kcat-Pa55word"
SASL_HANDSHAKE, METADATA = 17, 3


class Listeners:
    def __init__(self, proc: BrokerProcess, ports: dict[str, int], ca) -> None:
        self.proc, self.ports, self.ca = proc, ports, ca


@pytest.fixture(scope="module")
def listeners(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sasl-v0")
    certs = make_certs(tmp / "certs", ())
    data = tmp / "data"
    plain, secure = free_port(), free_port()
    mechanisms = ", ".join(f'"{m}"' for m in MECHANISMS)
    tables = f"""
[[listeners]]
name = "SASL"
address = "127.0.0.1:{plain}"
protocol = "SASL_PLAINTEXT"
sasl_mechanisms = [{mechanisms}]

[[listeners]]
name = "SECURE"
address = "127.0.0.1:{secure}"
protocol = "SASL_SSL"
sasl_mechanisms = [{mechanisms}]
ssl_certfile = "{certs.server_cert}"
ssl_keyfile = "{certs.server_key}"
"""
    add_user_offline(data, USER, PASSWORD, "SCRAM-SHA-256", "SCRAM-SHA-512")
    proc = BrokerProcess(data, group={"initial_rebalance_delay_ms": 0}, tables=tables, port=plain, listen=False)
    proc.start()
    try:
        yield Listeners(proc, {"SASL_PLAINTEXT": plain, "SASL_SSL": secure}, certs.ca)
    finally:
        proc.finish()


# ---- kcat ---------------------------------------------------------------------------------


def kcat(listeners: Listeners, protocol: str, mechanism: str, password: str, *args: str,
         stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    options = ["-b", f"127.0.0.1:{listeners.ports[protocol]}", "-X", f"security.protocol={protocol}",
               "-X", f"sasl.mechanisms={mechanism}", "-X", f"sasl.username={USER}",
               "-X", f"sasl.password={password}"]
    if protocol == "SASL_SSL":
        options += ["-X", f"ssl.ca.location={listeners.ca}"]
    return subprocess.run([KCAT, *options, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def test_kcat_is_the_librdkafka_that_needs_v0():
    assert KCAT is not None, "kcat is not installed: `make kcat` (make test does)"
    version = subprocess.run([KCAT, "-V"], capture_output=True, text=True, timeout=30).stdout
    assert "kcat - Apache Kafka producer and consumer tool" in version
    assert "Version 1.7.1" in version and "librdkafka 2.0.2" in version, version


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat_authenticates_produces_and_consumes(listeners, protocol, mechanism):
    topic = f"kcat-{mechanism.lower()}-{protocol.lower()}-{uuid.uuid4().hex[:6]}"
    produced = kcat(listeners, protocol, mechanism, PASSWORD, "-P", "-t", topic, "-p", "0",
                    stdin="first\nsecond\n")
    assert produced.returncode == 0, produced.stderr
    consumed = kcat(listeners, protocol, mechanism, PASSWORD, "-C", "-t", topic, "-p", "0", "-o", "beginning",
                    "-e", "-f", "%s\\n")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["first", "second"]
    assert "SASL Handshake not supported" not in produced.stderr + consumed.stderr


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat_with_a_wrong_password_is_refused_fast(listeners, protocol, mechanism):
    """The broker answers the wrong password with SASL_AUTHENTICATION_FAILED and its message
    and closes: kcat's producer gives up on that answer (an authentication failure), not on
    a timeout (the subprocess timeout only guards against a hang)."""
    produced = kcat(listeners, protocol, mechanism, "not-the-password", "-P", "-t", "never-written",
                    stdin="x\n", timeout=30)
    assert produced.returncode != 0
    assert "SASL authentication error: Authentication failed" in produced.stderr, produced.stderr
    assert "Local: Authentication failure" in produced.stderr, produced.stderr
    assert "SASL Handshake not supported" not in produced.stderr


# ---- the unframed exchange, over a raw socket ---------------------------------------------


class Raw:
    """One connection speaking Kafka frames and, after a v0 handshake, bare SASL frames."""

    def __init__(self, listeners: Listeners, protocol: str) -> None:
        sock = socket.create_connection(("127.0.0.1", listeners.ports[protocol]), timeout=15)
        if protocol == "SASL_SSL":
            context = ssl.create_default_context(cafile=str(listeners.ca))
            sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
        self.sock = sock
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return data

    def frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read(4))
        return self._read(size)

    def ask(self, api_key: int, version: int, **fields):
        self.correlation += 1
        request = build(request_class(api_key, version), **fields)
        self.sock.sendall(encode_request(api_key, version, self.correlation, "raw-v0", request))
        correlation, response = decode_response(api_key, version, self.frame())
        assert correlation == self.correlation
        return response

    def token(self, message: bytes) -> bytes:
        """One SASL message in a bare frame; the server's reply, bare too."""
        self.sock.sendall(struct.pack(">i", len(message)) + message)
        return self.frame()


def _scram_client(raw: Raw, mechanism: str, password: str) -> bytes:
    """RFC 5802 from the client's side; the server's final message."""
    name = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    nonce = base64.b64encode(os.urandom(18)).decode()
    bare = f"n={USER},r={nonce}"
    first = raw.token(f"n,,{bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in first.split(","))
    salted = hashlib.pbkdf2_hmac(name, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", name).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{bare},{first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(name, client_key).digest(), auth_message, name).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    return raw.token(f"{without_proof},p={proof}".encode())


def _authenticate_v0(raw: Raw, mechanism: str, password: str) -> bytes:
    handshake = raw.ask(SASL_HANDSHAKE, 0, mechanism=mechanism)
    assert int(handshake.error_code) == 0 and mechanism in handshake.mechanisms
    if mechanism == "PLAIN":
        return raw.token(f"\0{USER}\0{password}".encode())
    return _scram_client(raw, mechanism, password)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_v0_unframed_exchange_authenticates_then_serves_requests(listeners, protocol, mechanism):
    raw = Raw(listeners, protocol)
    try:
        last = _authenticate_v0(raw, mechanism, PASSWORD)
        if mechanism == "PLAIN":
            assert last == b""                                  # PLAIN's empty server message
        else:
            assert last.startswith(b"v=")                        # the server's signature
        metadata = raw.ask(METADATA, 9, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False)
        assert [b.port for b in metadata.brokers]
    finally:
        raw.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_v0_unframed_exchange_with_a_wrong_password_closes_the_connection(listeners, protocol, mechanism):
    raw = Raw(listeners, protocol)
    try:
        with pytest.raises((ConnectionError, ssl.SSLError, OSError)):
            _authenticate_v0(raw, mechanism, "wrong")
            raw.ask(METADATA, 9, topics=None, allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False)
    finally:
        raw.close()
    # The broker serves everyone else.
    good = Raw(listeners, protocol)
    try:
        _authenticate_v0(good, mechanism, PASSWORD)
    finally:
        good.close()
