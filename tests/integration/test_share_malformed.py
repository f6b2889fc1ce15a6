"""Malformed and out-of-turn share-group requests (KIP-932) on a real `kgroup serve`: each
gets a clear error code (and changes nothing), hostile bytes close the connection, and the
broker goes on serving the group's real member.

The requests are built by hand with our client's request builder, so the test can send what
no well-behaved client would: an unknown member, a wrong share-session epoch, acknowledgement
ranges that are reversed, overlapping, of an unknown type or far outside the window.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid

import pytest

from kgroup.error_codes import ErrorCode
from kgroup.wire.api_keys import ApiKey
from tests.integration.broker_process import BrokerProcess
from tests.integration.share_clients import SHARE_SETTINGS, KgroupCluster, RawShareClient, produce

pytestmark = pytest.mark.integration

TOPIC, RECORDS = "malformed-t", 10


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("share-malformed") / "data", group=SHARE_SETTINGS).start()
    KgroupCluster(proc).create_topic(TOPIC, 1)
    produce(proc.bootstrap, TOPIC, RECORDS, 1)
    yield proc
    proc.finish()                   # exits cleanly, no traceback in its log


def acquired(resp) -> list[tuple[int, int, int]]:
    return [(int(r.first_offset), int(r.last_offset), int(r.delivery_count))
            for t in resp.responses for p in t.partitions for r in p.acquired_records]


def ack_codes(resp, field: str = "error_code") -> list[int]:
    return [int(getattr(p, field)) for t in resp.responses for p in t.partitions]


E = ErrorCode


def test_kip932_share_fetch_from_an_unknown_member_or_group_is_refused(broker):
    async def scenario():
        async with RawShareClient(broker.bootstrap, TOPIC, "unknown-member") as raw:
            await raw.join("member-a")
            ghost = await raw.fetch("ghost", 0)
            assert ghost.error_code == E.UNKNOWN_MEMBER_ID and ghost.error_message, ghost
            nogroup = await raw.fetch("member-a", 0, group="no-such-share-group")
            assert nogroup.error_code == E.GROUP_ID_NOT_FOUND, nogroup
            empty = await raw.fetch("", 0)
            assert empty.error_code == E.INVALID_REQUEST, empty
            # Nothing was handed to the ghost: the real member still gets every record.
            got = await raw.fetch("member-a", 0)
            assert got.error_code == 0 and acquired(got) == [(0, RECORDS - 1, 1)], got
            # A heartbeat from a member the group does not know, or at an epoch it never had.
            assert (await raw.heartbeat("ghost", 3, topics=None)).error_code == E.UNKNOWN_MEMBER_ID
            assert (await raw.heartbeat("member-a", 99, topics=None)).error_code == E.FENCED_MEMBER_EPOCH
            assert (await raw.heartbeat("member-a", -5, topics=None)).error_code == E.INVALID_REQUEST
            assert (await raw.heartbeat("member-a", 0, group="")).error_code == E.INVALID_REQUEST   # as Kafka 4.4: "GroupId can't be empty"
            closed = await raw.fetch("member-a", -1)
            assert closed.error_code == 0, closed

    asyncio.run(scenario())


def test_kip932_wrong_share_session_epochs_get_session_errors(broker):
    async def scenario():
        async with RawShareClient(broker.bootstrap, TOPIC, "session-epochs") as raw:
            await raw.join("member-b")
            assert (await raw.fetch("member-b", 5)).error_code == E.SHARE_SESSION_NOT_FOUND
            assert (await raw.acknowledge("member-b", 0, [(0, 0, [1])])).error_code == E.INVALID_SHARE_SESSION_EPOCH
            first = await raw.fetch("member-b", 0)
            assert first.error_code == 0 and acquired(first), first
            held = acquired(first)
            # An opening request cannot carry acknowledgements.
            assert (await raw.fetch("member-b", 0, acks=[(0, 0, [1])])).error_code == E.INVALID_REQUEST
            wrong = await raw.fetch("member-b", 7)
            assert wrong.error_code == E.INVALID_SHARE_SESSION_EPOCH and wrong.error_message, wrong
            # A wrong epoch ends the session (its records go back); the next is not found.
            assert (await raw.fetch("member-b", 2)).error_code == E.SHARE_SESSION_NOT_FOUND
            again = await raw.fetch("member-b", 0)
            assert again.error_code == 0
            assert [(f, la) for f, la, _ in acquired(again)] == [(f, la) for f, la, _ in held]
            assert {c for _, _, c in acquired(again)} == {c + 1 for _, _, c in held}
            assert (await raw.fetch("member-b", -1)).error_code == 0

    asyncio.run(scenario())


def test_kip932_bad_acknowledgement_ranges_are_refused_and_change_nothing(broker):
    async def scenario():
        async with RawShareClient(broker.bootstrap, TOPIC, "ack-ranges") as raw:
            await raw.join("member-c")
            got = await raw.fetch("member-c", 0)
            assert got.error_code == 0 and acquired(got), got
            first, last, _ = acquired(got)[0]
            epoch = 1
            # Reversed range, or no type: the whole request is malformed (the epoch stays);
            # Kafka 4.4 answers it without a message, and so does kgroup.
            reversed_ = await raw.acknowledge("member-c", epoch, [(last, first, [1])])
            assert reversed_.error_code == E.INVALID_REQUEST and not reversed_.error_message, reversed_
            untyped = await raw.acknowledge("member-c", epoch, [(first, last, [])])
            assert untyped.error_code == E.INVALID_REQUEST
            # Per partition: unknown type, overlapping batches, too many types: INVALID_REQUEST.
            for acks in ([(first, last, [9])], [(first, last, [1]), (first, first, [1])],
                         [(first, first, [1, 1, 1])]):
                resp = await raw.acknowledge("member-c", epoch, acks)
                assert resp.error_code == 0 and ack_codes(resp) == [E.INVALID_REQUEST], (acks, resp)
                epoch += 1
            # Offsets never delivered, however far out the range reaches: answered at once.
            for acks in ([(first, 2**62, [1])], [(last + 1, last + 5, [1])]):
                resp = await raw.acknowledge("member-c", epoch, acks)
                assert ack_codes(resp) == [E.INVALID_RECORD_STATE], (acks, resp)
                epoch += 1
            unknown = await raw.acknowledge("member-c", epoch, [(first, last, [1])], topic_id=str(uuid.uuid4()))
            assert ack_codes(unknown) == [E.UNKNOWN_TOPIC_ID], unknown
            epoch += 1
            # Somebody else's records, or records of no session at all.
            assert (await raw.acknowledge("someone", 1, [(first, last, [1])])).error_code == E.SHARE_SESSION_NOT_FOUND
            # Nothing of the above changed a record: they are still this member's to accept.
            ok = await raw.acknowledge("member-c", epoch, [(first, last, [1])])
            assert ok.error_code == 0 and ack_codes(ok) == [0], ok
            epoch += 1
            assert (await raw.fetch("member-c", -1)).error_code == 0

    asyncio.run(scenario())


def test_kip932_hostile_share_frames_close_the_connection_and_the_broker_keeps_serving(broker):
    async def member_still_served() -> None:
        async with RawShareClient(broker.bootstrap, TOPIC, "hostile") as raw:
            await raw.join("member-d")
            resp = await raw.fetch("member-d", 0)
            assert resp.error_code == 0, resp
            assert (await raw.fetch("member-d", -1)).error_code == 0

    host, port = broker.bootstrap.split(":")
    for api_key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE):
        # A v1 header (flexible: client id, then tagged fields) and a body cut short.
        header = struct.pack(">hhi", api_key, 1, 7) + struct.pack(">h", 3) + b"bad" + b"\x00"
        for body in (b"", b"\x05ab", b"\xff" * 40):
            frame = header + body
            with socket.create_connection((host, int(port)), timeout=5) as s:
                s.settimeout(5)
                s.sendall(struct.pack(">i", len(frame)) + frame)
                try:
                    answer = s.recv(4096)
                except (ConnectionResetError, socket.timeout):
                    answer = b""
                assert answer == b"", (api_key, body, answer)       # closed, no answer
    asyncio.run(member_still_served())
