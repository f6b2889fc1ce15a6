"""An error answer for every API and version the broker serves: it encodes, decodes, carries
the error in every error field, and names what the request named."""

from __future__ import annotations

import dataclasses

import pytest
from kio.schema.errors import ErrorCode as KioErrorCode

from kgroup.error_codes import ErrorCode
from kgroup.broker.concerns import SERVED
from kgroup.wire import RequestHeader, decode_response, encode_response, request_class
from kgroup.wire.error_responses import error_response
from kgroup.wire.subjects import subjects_of
from tests.unit.wire.wire_samples import sample

ALL = [(r.api_key, v) for r in SERVED.values() for v in range(r.min_version, r.max_version + 1)]


def error_codes(entity) -> list[int]:
    """Every error_code in a response, at any depth."""
    found = []
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if isinstance(value, KioErrorCode):
            found.append(int(value))
        elif isinstance(value, tuple):
            found += [c for item in value if dataclasses.is_dataclass(item) for c in error_codes(item)]
        elif dataclasses.is_dataclass(value):
            found += error_codes(value)
    return found


@pytest.mark.parametrize(("api_key", "version"), ALL, ids=[f"{SERVED[k].name}-v{v}" for k, v in ALL])
def test_every_api_and_version_gets_an_error_answer_that_round_trips(api_key, version):
    request = sample(request_class(api_key, version))
    response = error_response(api_key, version, request, ErrorCode.NOT_COORDINATOR, "fault f-1")
    header = RequestHeader(api_key, version, 7, "c", False)
    frame = encode_response(header, response)
    correlation, decoded = decode_response(api_key, version, frame[4:])
    assert correlation == 7
    codes = error_codes(decoded)
    # Every API's response has somewhere to put the error, and it is everywhere there is.
    assert codes and set(codes) == {ErrorCode.NOT_COORDINATOR}, (SERVED[api_key].name, version, codes)


def test_per_partition_errors_name_each_partition_the_request_named():
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

    request = FetchRequest(max_wait=0, min_bytes=1, topics=(
        FetchTopic(topic="orders", partitions=(_fetch_partition(FetchPartition, 0), _fetch_partition(FetchPartition, 3))),
        FetchTopic(topic="audit", partitions=(_fetch_partition(FetchPartition, 1),)),
    ), forgotten_topics_data=())
    response = error_response(1, 12, request, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    named = {(t.topic, p.partition_index, int(p.error_code), p.high_watermark)
             for t in response.responses for p in t.partitions}
    assert named == {("orders", 0, 6, -1), ("orders", 3, 6, -1), ("audit", 1, 6, -1)}
    assert int(response.error_code) == 6


def _fetch_partition(cls, partition: int):
    return cls(partition=partition, fetch_offset=0, partition_max_bytes=1024)


def test_bare_ids_in_the_request_become_the_answers_keys():
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
    from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic

    described = error_response(15, 5, DescribeGroupsRequest(groups=("a", "b"), include_authorized_operations=False),
                               ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    assert [(g.group_id, int(g.error_code)) for g in described.groups] == [("a", 14), ("b", 14)]
    fetched = error_response(9, 7, OffsetFetchRequest(group_id="g", topics=(
        OffsetFetchRequestTopic(name="t", partition_indexes=(2, 5)),), require_stable=False), ErrorCode.NOT_COORDINATOR)
    assert [(p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions] == [(2, -1), (5, -1)]


def test_an_error_message_field_carries_the_message():
    from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest

    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=4, topic_partitions=None)
    response = error_response(68, 1, request, ErrorCode.FENCED_MEMBER_EPOCH, "fault f-2")
    assert (int(response.error_code), response.error_message, response.member_id, response.member_epoch) == (
        110, "fault f-2", "m", -1)


# ---- what a request names ---------------------------------------------------------------------

def test_subjects_of_a_join_an_offset_fetch_batch_and_a_produce():
    from kio.schema.offset_fetch.v8.request import (
        OffsetFetchRequest,
        OffsetFetchRequestGroup,
        OffsetFetchRequestTopics,
    )
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

    join = sample(request_class(11, 7))
    s = subjects_of(join)
    assert s.groups == {join.group_id} and s.members == {join.member_id, join.group_instance_id}
    batch = OffsetFetchRequest(groups=(
        OffsetFetchRequestGroup(group_id="g1", topics=(OffsetFetchRequestTopics(name="t", partition_indexes=(0, 1)),)),
        OffsetFetchRequestGroup(group_id="g2", topics=None)), require_stable=False)
    s = subjects_of(batch)
    assert s.groups == {"g1", "g2"} and s.topics == {"t"} and s.partitions == {("t", 0), ("t", 1)}
    produce = ProduceRequest(acks=1, timeout=0, topic_data=(
        TopicProduceData(name="orders", partition_data=(PartitionProduceData(index=4, records=None),)),))
    s = subjects_of(produce)
    assert s.topics == {"orders"} and s.partitions == {("orders", 4)} and not s.groups


def test_find_coordinator_names_a_group_only_for_group_keys():
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

    assert subjects_of(FindCoordinatorRequest(key_type=0, coordinator_keys=("g",))).groups == {"g"}
    assert subjects_of(FindCoordinatorRequest(key_type=1, coordinator_keys=("txn",))).groups == set()
