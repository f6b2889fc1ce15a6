"""Fault specs (what is refused, and why, in one line) and matching against requests."""

from __future__ import annotations

import pytest

from kgroup.broker.control.faults import Faults, FaultSpec, FaultSpecError
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, request_class
from kgroup.broker.concerns import SERVED
from tests.unit.wire.wire_samples import sample

HEARTBEAT, FETCH = 12, 1


def header(api_key: int, client_id: str = "app") -> RequestHeader:
    return RequestHeader(api_key, 4, 1, client_id, False)


def heartbeat(group: str = "g", member: str = "m-1", instance: str | None = None):
    from kio.schema.heartbeat.v4.request import HeartbeatRequest

    return HeartbeatRequest(group_id=group, generation_id=1, member_id=member, group_instance_id=instance)


def fetch(*partitions: tuple[str, int]):
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

    topics = {}
    for t, p in partitions:
        topics.setdefault(t, []).append(FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1))
    return FetchRequest(max_wait=0, min_bytes=1, forgotten_topics_data=(),
                        topics=tuple(FetchTopic(topic=t, partitions=tuple(ps)) for t, ps in topics.items()))


@pytest.mark.parametrize(("body", "reason"), [
    ([], "a fault is a JSON object"),
    ({"api": "Hearbeat", "error": "NOT_COORDINATOR"}, "api must name an API the broker serves"),
    ({"error": "NOT_COORDINATOR"}, "api must name an API"),
    ({"api": "Heartbeat"}, "a fault needs error, delay_ms, throttle_ms or close_connection"),
    ({"api": "Heartbeat", "error": "NOT_A_CODE"}, "error must be a Kafka error name"),
    ({"api": "Heartbeat", "error": 16}, "error must be a Kafka error name"),
    ({"api": "Heartbeat", "error": "NONE"}, "error NONE is no fault"),
    ({"api": "Heartbeat", "error": "NOT_COORDINATOR", "close_connection": True}, "not both"),
    ({"api": "Heartbeat", "delay_ms": -5}, "delay_ms must be a whole number from 0 to 600000"),
    ({"api": "Heartbeat", "delay_ms": 1.5}, "delay_ms must be a whole number"),
    ({"api": "Heartbeat", "error": "NOT_COORDINATOR", "count": 0}, "count must be a whole number from 1"),
    ({"api": "Heartbeat", "error": "NOT_COORDINATOR", "count": True}, "count must be a whole number"),
    ({"api": "Heartbeat", "close_connection": "yes"}, "close_connection must be true or false"),
    ({"api": "Fetch", "delay_ms": 5, "partition": -1}, "partition must be a partition number"),
    ({"api": "Fetch", "delay_ms": 5, "topic": 3}, "topic must be a string"),
    ({"api": "Heartbeat", "eror": "NOT_COORDINATOR"}, "unknown field 'eror'"),
])
def test_a_bad_spec_is_refused_with_a_one_line_reason(body, reason):
    with pytest.raises(FaultSpecError) as refused:
        FaultSpec.parse(body)
    assert reason in str(refused.value) and "\n" not in str(refused.value)


def test_every_api_the_broker_serves_can_be_named_in_any_case():
    for api in SERVED.values():
        spec = FaultSpec.parse({"api": api.name.upper(), "close_connection": True})
        assert (spec.api, spec.api_key) == (api.name, api.api_key)


def test_a_fault_acts_count_times_then_is_gone():
    faults = Faults()
    fault = faults.add(FaultSpec.parse({"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "count": 2}))
    assert faults.armed
    actions = [faults.hit(header(HEARTBEAT), heartbeat()) for _ in range(3)]
    assert [a.error if a else None for a in actions] == [ErrorCode.REBALANCE_IN_PROGRESS] * 2 + [None]
    assert fault.hits == 2 and faults.list() == [] and not faults.armed


def test_matching_by_group_member_instance_and_client_id():
    faults = Faults()
    faults.add(FaultSpec.parse({"api": "Heartbeat", "error": "NOT_COORDINATOR", "group": "g", "member": "static-1",
                                "client_id": "app", "count": 10}))
    assert faults.hit(header(HEARTBEAT), heartbeat(group="other", instance="static-1")) is None
    assert faults.hit(header(HEARTBEAT), heartbeat(instance="static-2")) is None
    assert faults.hit(header(HEARTBEAT, client_id="tool"), heartbeat(instance="static-1")) is None
    assert faults.hit(header(HEARTBEAT), heartbeat(instance="static-1")) is not None
    assert faults.hit(header(FETCH), fetch(("t", 0))) is None               # another API


def test_matching_by_topic_and_partition_and_by_topic_id():
    faults = Faults(topic_id_of=lambda name: "id-orders" if name == "orders" else None)
    faults.add(FaultSpec.parse({"api": "Fetch", "delay_ms": 10, "topic": "orders", "partition": 2, "count": 10}))
    assert faults.hit(header(FETCH), fetch(("orders", 1), ("audit", 2))) is None
    assert faults.hit(header(FETCH), fetch(("orders", 1), ("orders", 2))).delay_ms == 10
    by_id = faults.list()[0]
    assert faults.hit(header(FETCH), fetch(("id-orders", 2))) is not None    # Fetch v13+ names ids
    assert by_id.hits == 2


def test_the_oldest_matching_fault_acts_and_remove_and_clear_disarm():
    faults = Faults()
    first = faults.add(FaultSpec.parse({"api": "Heartbeat", "error": "NOT_COORDINATOR", "group": "g"}))
    second = faults.add(FaultSpec.parse({"api": "Heartbeat", "close_connection": True}))
    assert faults.hit(header(HEARTBEAT), heartbeat()).fault_id == first.id
    assert faults.hit(header(HEARTBEAT), heartbeat()).close_connection
    third = faults.add(FaultSpec.parse({"api": "Heartbeat", "delay_ms": 1}))
    assert faults.remove(third.id) and not faults.remove(third.id) and not faults.remove(second.id)
    assert not faults.armed
    faults.add(FaultSpec.parse({"api": "Fetch", "delay_ms": 1}))
    assert faults.clear() == 1 and not faults.armed and faults.hit(header(FETCH), fetch(("t", 0))) is None


def test_requests_of_every_api_can_be_matched_by_their_subjects():
    faults = Faults()
    for api in SERVED.values():
        faults.add(FaultSpec.parse({"api": api.name, "delay_ms": 1, "count": 1}))
        request = sample(request_class(api.api_key, api.max_version))
        assert faults.hit(RequestHeader(api.api_key, api.max_version, 1, None, True), request) is not None
    assert not faults.armed
