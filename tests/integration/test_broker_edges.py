"""Edges of `kgroup serve` seen from a raw connection: version negotiation, the request size
limit, batched FindCoordinator, and SIGTERM with requests in flight."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct

import pytest

from kgroup.client import AdminClient
from kgroup.client.connection import Connection
from kgroup.wire import decode_response, encode_request, request_class
from kgroup.wire.kio_build import build
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, end_offsets

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One broker for the edges that leave it serving (the SIGTERM test stops its own)."""
    proc = BrokerProcess(tmp_path_factory.mktemp("edges") / "data").start()
    yield proc
    proc.finish()


def _read_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    return sock.recv(size, socket.MSG_WAITALL)


def test_too_new_api_versions_gets_a_v0_reply_and_the_connection_stays_open(shared):
    with socket.create_connection(("127.0.0.1", shared.port), timeout=10) as s:
        body = struct.pack(">hhih", 18, 99, 7, -1)          # ApiVersions v99, null client id
        s.sendall(struct.pack(">i", len(body)) + body)
        correlation, reply = decode_response(18, 0, _read_frame(s))
        # UNSUPPORTED_VERSION in the v0 layout with ApiVersions' own range only, as Kafka 4.4
        # answers (KIP-511): enough for the client to fall back and ask again.
        assert correlation == 7 and int(reply.error_code) == 35
        ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in reply.api_keys}
        assert set(ranges) == {18} and ranges[18][1] < 99
        # Same connection, a version we serve: answered.
        s.sendall(encode_request(18, 3, 8, "edge", build(request_class(18, 3),
                                                         client_software_name="t",
                                                         client_software_version="1")))
        correlation, reply = decode_response(18, 3, _read_frame(s))
        assert correlation == 8 and int(reply.error_code) == 0


def test_a_frame_past_the_request_limit_closes_the_connection_at_once(shared):
    with socket.create_connection(("127.0.0.1", shared.port), timeout=10) as s:
        # Only the size and a few bytes: the broker must not wait for (or buffer) 100 MiB.
        s.sendall(struct.pack(">i", 100 * 1024 * 1024 + 1) + b"\x00" * 16)
        try:
            assert s.recv(1) == b""
        except ConnectionResetError:
            pass
    assert "exceeds the limit" in shared.log()
    # The broker goes on serving.
    with socket.create_connection(("127.0.0.1", shared.port), timeout=10) as s:
        s.sendall(encode_request(18, 0, 1, "edge", build(request_class(18, 0))))
        assert decode_response(18, 0, _read_frame(s))[0] == 1


def test_find_coordinator_v4_answers_every_key_of_a_batch(shared):
    async def go():
        conn = await Connection.open("127.0.0.1", shared.port)
        try:
            resp = await conn.request(10, {"key_type": 0, "coordinator_keys": ["a", "b", "c"]}, version=4)
        finally:
            await conn.close()
        return resp

    resp = asyncio.run(go())
    assert [c.key for c in resp.coordinators] == ["a", "b", "c"]
    for c in resp.coordinators:
        assert int(c.error_code) == 0
        assert (int(c.node_id), c.host, int(c.port)) == (1, "127.0.0.1", shared.port)


IN_FLIGHT = 50


def test_sigterm_answers_requests_in_flight_and_keeps_every_acknowledged_record(broker):
    create_topic(broker.bootstrap, "t", 1)

    async def go():
        async with AdminClient(broker.bootstrap) as admin:
            await admin.produce("t", 0, [(None, b"warm-up")])
            sends = [asyncio.create_task(admin.produce("t", 0, [(None, f"r{i}".encode())], acks=-1))
                     for i in range(IN_FLIGHT)]
            await asyncio.sleep(0)                        # every request is written ...
            os.kill(broker.proc.pid, signal.SIGTERM)      # ... and the broker is told to stop
            done = []
            for task in asyncio.as_completed(sends):
                try:
                    done.append(await task)
                except Exception:
                    pass                                  # cut off: not acknowledged
            return done

    acknowledged = asyncio.run(go())
    assert broker.proc.wait(30) == 0, broker.log()
    assert "stopped cleanly" in broker.log()
    # Requests sent just before the signal were all served, not dropped.
    assert len(acknowledged) == IN_FLIGHT
    broker.start()
    # Every acknowledged record survived the stop (fsync=always: synced before the answer).
    assert end_offsets(broker.bootstrap, "t", 1)[0] == 1 + IN_FLIGHT
