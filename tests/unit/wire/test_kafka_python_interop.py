"""Real bytes from kafka-python's protocol classes decode with ours, and the reverse."""

from __future__ import annotations

import datetime
import warnings

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning)

from kafka.protocol.consumer import (  # noqa: E402
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (  # noqa: E402
    ApiVersionsRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse  # noqa: E402
from kio.schema.errors import ErrorCode  # noqa: E402
from kio.static.primitive import i32Timedelta  # noqa: E402
from wire_samples import sample  # noqa: E402

from kgroup.broker.concerns import SERVED  # noqa: E402

from kgroup.wire.codec import (  # noqa: E402
    RequestHeader,
    decode_request,
    encode_response,
    response_class,
)
from kgroup.wire.framing import FrameSplitter  # noqa: E402
from kgroup.wire.record_batch import build_batch, split_batches  # noqa: E402


def kp_frame(request, version: int, correlation_id: int = 11, client_id: str = "kp") -> bytes:
    """kafka-python's framed request bytes, run through our frame splitter."""
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    (payload,) = FrameSplitter().feed(bytes(request.encode(header=True, framed=True)))
    return payload


def ours(frame: bytes, api_key: int, version: int):
    header, req = decode_request(frame, SERVED)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        api_key,
        version,
        11,
        "kp",
    )
    assert req.__version__ == version
    return req


@pytest.mark.parametrize("version", [0, 1, 2, 5, 7, 9])
def test_join_group(version: int) -> None:
    proto = JoinGroupRequest.JoinGroupRequestProtocol
    kp = JoinGroupRequest(
        group_id="g1",
        session_timeout_ms=10000,
        rebalance_timeout_ms=30000,
        member_id="m-1",
        group_instance_id="inst-1" if version >= 5 else None,
        protocol_type="consumer",
        protocols=[proto(name="range", metadata=b"\x00\x01sub"), proto(name="cooperative-sticky", metadata=b"")],
        reason="rejoin" if version >= 8 else None,
    )
    req = ours(kp_frame(kp, version), 11, version)
    assert req.group_id == "g1" and req.member_id == "m-1"
    assert req.session_timeout == datetime.timedelta(seconds=10)
    if version >= 1:
        assert req.rebalance_timeout == datetime.timedelta(seconds=30)
    if version >= 5:
        assert req.group_instance_id == "inst-1"
    assert [(p.name, p.metadata) for p in req.protocols] == [
        ("range", b"\x00\x01sub"),
        ("cooperative-sticky", b""),
    ]


@pytest.mark.parametrize("version", [0, 3, 4])
def test_heartbeat(version: int) -> None:
    kp = HeartbeatRequest(group_id="g", generation_id=3, member_id="m", group_instance_id="i")
    req = ours(kp_frame(kp, version), 12, version)
    assert (req.group_id, req.generation_id, req.member_id) == ("g", 3, "m")
    if version >= 3:
        assert req.group_instance_id == "i"


@pytest.mark.parametrize("version", [0, 3, 5])
def test_sync_group(version: int) -> None:
    a = SyncGroupRequest.SyncGroupRequestAssignment
    kp = SyncGroupRequest(
        group_id="g",
        generation_id=2,
        member_id="m",
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[a(member_id="m", assignment=b"\x00\x03abc")],
    )
    req = ours(kp_frame(kp, version), 14, version)
    assert [(x.member_id, x.assignment) for x in req.assignments] == [("m", b"\x00\x03abc")]
    if version >= 5:
        assert (req.protocol_type, req.protocol_name) == ("consumer", "range")


@pytest.mark.parametrize("version", [0, 3, 5])
def test_leave_group(version: int) -> None:
    mi = LeaveGroupRequest.MemberIdentity
    kp = LeaveGroupRequest(
        group_id="g",
        member_id="m",
        members=[mi(member_id="m", group_instance_id="i", reason="bye" if version >= 5 else None)],
    )
    req = ours(kp_frame(kp, version), 13, version)
    if version >= 3:
        assert [(m.member_id, m.group_instance_id) for m in req.members] == [("m", "i")]
    else:
        assert req.member_id == "m"


@pytest.mark.parametrize("version", [2, 7, 8, 9])
def test_offset_commit_with_ten_partitions(version: int) -> None:
    t = OffsetCommitRequest.OffsetCommitRequestTopic
    p = t.OffsetCommitRequestPartition
    kp = OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=4,
        member_id="m",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            t(
                name="orders",
                partitions=[
                    p(partition_index=i, committed_offset=100 + i, committed_leader_epoch=-1, committed_metadata="md")
                    for i in range(10)
                ],
            )
        ],
    )
    req = ours(kp_frame(kp, version), 8, version)
    assert req.generation_id_or_member_epoch == 4
    (topic,) = req.topics
    assert topic.name == "orders"
    assert [(x.partition_index, x.committed_offset, x.committed_metadata) for x in topic.partitions] == [
        (i, 100 + i, "md") for i in range(10)
    ]


@pytest.mark.parametrize("version", [1, 3, 7, 8, 9])
def test_offset_fetch(version: int) -> None:
    if version >= 8:
        g = OffsetFetchRequest.OffsetFetchRequestGroup
        kp = OffsetFetchRequest(
            groups=[g(group_id="g", member_id="m" if version >= 9 else None, member_epoch=-1,
                      topics=[g.OffsetFetchRequestTopics(name="t", partition_indexes=[0, 1])])],
            require_stable=True,
        )
    else:
        t = OffsetFetchRequest.OffsetFetchRequestTopic
        kp = OffsetFetchRequest(group_id="g", topics=[t(name="t", partition_indexes=[0, 1])],
                                require_stable=version >= 7)
    req = ours(kp_frame(kp, version), 9, version)
    if version >= 8:
        (group,) = req.groups
        assert group.group_id == "g" and group.topics[0].partition_indexes == (0, 1)
    else:
        assert req.group_id == "g" and req.topics[0].partition_indexes == (0, 1)


@pytest.mark.parametrize("version", [0, 1, 3, 4, 6])
def test_find_coordinator(version: int) -> None:
    kp = FindCoordinatorRequest(key="g", key_type=0, coordinator_keys=["g", "h"])
    req = ours(kp_frame(kp, version), 10, version)
    if version >= 4:
        assert req.coordinator_keys == ("g", "h")
    else:
        assert req.key == "g"


@pytest.mark.parametrize("version", [1, 4, 9, 10, 12])
def test_metadata(version: int) -> None:
    t = MetadataRequest.MetadataRequestTopic
    kp = MetadataRequest(
        topics=[t(name="orders", topic_id=None)] if version < 10 else [t(name="orders")],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    req = ours(kp_frame(kp, version), 3, version)
    assert [x.name for x in req.topics] == ["orders"]


@pytest.mark.parametrize("version", [3, 7, 9, 11])
def test_produce_with_a_real_batch(version: int) -> None:
    blob = build_batch([(b"k", b"v", [("h", b"1")], 1_700_000_000_000)])
    td = ProduceRequest.TopicProduceData
    kp = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=1500,
        topic_data=[td(name="orders", partition_data=[td.PartitionProduceData(index=0, records=blob)])],
    )
    req = ours(kp_frame(kp, version), 0, version)
    (topic,) = req.topic_data
    (part,) = topic.partition_data
    assert part.index == 0 and bytes(part.records) == blob
    assert split_batches(part.records)[0].header.record_count == 1


@pytest.mark.parametrize("version", [4, 7, 11, 12])
def test_fetch(version: int) -> None:
    ft = FetchRequest.FetchTopic
    kp = FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[ft(topic="orders", partitions=[ft.FetchPartition(partition=0, fetch_offset=42, log_start_offset=-1,
                                                                  partition_max_bytes=1 << 16)])],
        forgotten_topics_data=[],
        rack_id="",
    )
    req = ours(kp_frame(kp, version), 1, version)
    (topic,) = req.topics
    assert topic.topic == "orders" and topic.partitions[0].fetch_offset == 42


@pytest.mark.parametrize("version", [0, 3, 4])
def test_api_versions_request(version: int) -> None:
    kp = ApiVersionsRequest(client_software_name="kafka-python", client_software_version="3.0.12")
    req = ours(kp_frame(kp, version), 18, version)
    if version >= 3:
        assert req.client_software_name == "kafka-python"


# --- the other direction: our responses decoded by kafka-python -----------------------

ZERO = i32Timedelta.parse(datetime.timedelta(0))


def kp_decode(kp_cls, api_key: int, version: int, response, correlation_id: int = 5):
    frame = encode_response(RequestHeader(api_key, version, correlation_id, None, False), response)
    decoded = kp_cls.decode(frame, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == correlation_id
    return decoded


@pytest.mark.parametrize("version", [0, 1, 5, 7, 9])
def test_join_group_response(version: int) -> None:
    cls = response_class(11, version)
    member_cls = cls.__dataclass_fields__["members"].type.__args__[0]
    fields = {
        "error_code": ErrorCode.none,
        "generation_id": 3,
        "protocol_name": "range",
        "leader": "m-1",
        "member_id": "m-1",
        "members": (member_cls(member_id="m-1", metadata=b"meta"),),
    }
    extra = {"throttle_time": ZERO, "protocol_type": "consumer", "skip_assignment": False}
    fields.update({k: v for k, v in extra.items() if k in cls.__dataclass_fields__})
    kp = kp_decode(JoinGroupResponse, 11, version, cls(**fields))
    assert (kp.error_code, kp.generation_id, kp.protocol_name, kp.leader) == (0, 3, "range", "m-1")
    assert [(m.member_id, bytes(m.metadata)) for m in kp.members] == [("m-1", b"meta")]


@pytest.mark.parametrize(("kp_cls", "api_key", "versions"), [
    (HeartbeatResponse, 12, [0, 3, 4]),
    (SyncGroupResponse, 14, [0, 3, 5]),
    (LeaveGroupResponse, 13, [0, 3, 5]),
    (OffsetCommitResponse, 8, [2, 8, 9]),
    (OffsetFetchResponse, 9, [1, 7, 8, 9]),
    (FindCoordinatorResponse, 10, [0, 3, 4, 6]),
    (MetadataResponse, 3, [1, 9, 10, 12]),
    (ProduceResponse, 0, [3, 8, 9, 11]),
    (FetchResponse, 1, [4, 11, 12, 16]),
])
def test_sample_responses_decode_with_kafka_python(kp_cls, api_key: int, versions: list[int]) -> None:
    for version in versions:
        response = sample(response_class(api_key, version))
        kp = kp_decode(kp_cls, api_key, version, response)
        assert kp.API_VERSION == version
        assert kp.to_dict() is not None


def test_sync_group_response_fields() -> None:
    cls = response_class(14, 5)
    resp = cls(throttle_time=ZERO, error_code=ErrorCode.rebalance_in_progress,
               protocol_type="consumer", protocol_name="range", assignment=b"\x00\x01x")
    kp = kp_decode(SyncGroupResponse, 14, 5, resp, correlation_id=99)
    assert (kp.error_code, kp.protocol_type, kp.protocol_name, bytes(kp.assignment)) == (
        27, "consumer", "range", b"\x00\x01x")


def test_heartbeat_response_error_code() -> None:
    resp = response_class(12, 4)(throttle_time=ZERO, error_code=ErrorCode.illegal_generation)
    assert kp_decode(HeartbeatResponse, 12, 4, resp).error_code == 22
