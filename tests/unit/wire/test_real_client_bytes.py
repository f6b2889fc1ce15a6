"""Bytes sent by real clients over a loopback socket decode with ours.

A tiny thread-per-connection server answers ApiVersions with ``api_versions_response`` (or
the v0 fallback) and records every request it decodes; after the first non-ApiVersions
request it closes the connection, which makes each client give up quickly.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import struct
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kgroup.broker.concerns import SERVED

from kgroup.wire import (
    FrameSplitter,
    MalformedRequest,
    UnsupportedVersion,
    api_versions_response,
    decode_request,
    encode_api_versions_fallback,
    encode_response,
    peek_request_header,
)

warnings.filterwarnings("ignore", category=DeprecationWarning)


@contextmanager
def recording_server(api_versions_max: int = 4) -> Iterator[tuple[int, list]]:
    """``api_versions_max`` < 4 pretends to be a broker with fewer ApiVersions versions."""
    log: list = []
    ranges = tuple(
        dataclasses.replace(r, max_version=api_versions_max) if r.api_key == 18 else r
        for r in SERVED.values()
    )
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        splitter = FrameSplitter()
        with conn:
            while not stop.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                for frame in splitter.feed(data):
                    key, version, correlation_id = peek_request_header(frame)
                    if api_versions_max < 4 and key == 18 and version > api_versions_max:
                        log.append(("fallback", version))
                        conn.sendall(encode_api_versions_fallback(correlation_id, ranges=ranges))
                        continue
                    try:
                        header, request = decode_request(frame, SERVED)
                    except UnsupportedVersion as exc:
                        log.append(("unsupported", exc.api_key, exc.version))
                        if exc.api_key != 18:
                            return
                        conn.sendall(encode_api_versions_fallback(exc.correlation_id, ranges=ranges))
                        continue
                    except MalformedRequest as exc:
                        log.append(("malformed", str(exc)))
                        return
                    log.append((header.api_key, header.api_version, header.client_id, request))
                    if header.api_key != 18:
                        return
                    conn.sendall(encode_response(
                        header, api_versions_response(header.api_version, ranges=ranges)
                    ))

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conn.settimeout(5)
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1], log
    finally:
        stop.set()
        t.join(2)
        srv.close()


def _assert_negotiated(log: list, api_versions_version: int, client_prefix: str) -> None:
    assert not [e for e in log if e[0] in ("malformed", "unsupported")], log
    first = log[0]
    assert first[:2] == (18, api_versions_version) and first[2].startswith(client_prefix)
    # After our ApiVersions reply, the client moved on to a real request (Metadata).
    assert any(e[0] == 3 for e in log), log


def test_librdkafka_api_versions_then_metadata() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    with recording_server() as (port, log):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0})
        with pytest.raises(confluent_kafka.KafkaException):
            admin.list_topics(timeout=1.5)
    _assert_negotiated(log, 3, "rdkafka")
    metadata = next(e for e in log if e[0] == 3)
    assert metadata[1] == 13  # librdkafka asks for the newest we advertise


def test_aiokafka_api_versions_v0_then_metadata() -> None:
    aiokafka = pytest.importorskip("aiokafka")

    async def run(port: int) -> None:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}",
                                             request_timeout_ms=2000)
        try:
            await asyncio.wait_for(consumer.start(), 5)
        except Exception:
            pass
        finally:
            await consumer.stop()

    with recording_server() as (port, log):
        asyncio.run(run(port))
    _assert_negotiated(log, 0, "aiokafka")


def test_kafka_python_api_versions_v4_then_metadata() -> None:
    kafka = pytest.importorskip("kafka")

    with recording_server() as (port, log):
        # Constructing the admin client bootstraps: ApiVersions, then Metadata.
        try:
            kafka.KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}",
                                   request_timeout_ms=1500, bootstrap_timeout_ms=1500).close()
        except Exception:
            pass
    _assert_negotiated(log, 4, "kafka-python")


def test_raw_too_new_api_versions_over_a_socket() -> None:
    with recording_server() as (port, log):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            body = struct.pack(">hhih", 18, 9, 31, 1) + b"x\x00\x00"
            s.sendall(struct.pack(">i", len(body)) + body)
            (size,) = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))
            reply = s.recv(size, socket.MSG_WAITALL)
    assert struct.unpack_from(">ih", reply) == (31, 35)
    assert log == [("unsupported", 18, 9)]


def test_kafka_python_falls_back_from_v4_using_our_v0_reply() -> None:
    kafka = pytest.importorskip("kafka")

    with recording_server(api_versions_max=3) as (port, log):
        try:
            kafka.KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}",
                                   request_timeout_ms=1500, bootstrap_timeout_ms=1500).close()
        except Exception:
            pass
    assert log[0] == ("fallback", 4)
    assert log[1][:2] == (18, 3)  # retried with the highest version in our reply
    assert any(e[0] == 3 for e in log[2:]), log


def test_librdkafka_falls_back_using_our_v0_reply() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    with recording_server(api_versions_max=2) as (port, log):
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0})
        with pytest.raises(confluent_kafka.KafkaException):
            admin.list_topics(timeout=1.5)
    assert log[0] == ("fallback", 3)
    # librdkafka retries at a version our reply allows (2.16 goes straight to v0).
    assert log[1][0] == 18 and log[1][1] <= 2
    assert any(e[0] == 3 for e in log[2:]), log
