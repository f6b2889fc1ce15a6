"""The hand-written ConsumerGroupHeartbeat and Heartbeat response encoders match kio's, byte for byte."""

from __future__ import annotations

import uuid

from hypothesis import given, settings, strategies as st

from kgroup.wire import RequestHeader, response_class
from kgroup.wire.codec import _writer, _Buffer, _CORR
from kgroup.wire.codec import encode_response
from kgroup.wire.fast_responses import encode_consumer_group_heartbeat_response, encode_heartbeat_response
from kgroup.wire.kio_build import build, item


def kio_frame(correlation_id: int, response, header_tags: bool = True) -> bytes:
    buf = _Buffer()
    buf.write(_CORR.pack(correlation_id))
    if header_tags:
        buf.write(b"\x00")
    _writer(type(response))(buf, response)
    return buf.framed()


partitions = st.lists(st.integers(0, 2**31 - 1), max_size=20)
assignments = st.one_of(st.none(), st.lists(st.tuples(st.uuids(), partitions), max_size=5))


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from([0, 1]), corr=st.integers(-2**31, 2**31 - 1),
       error=st.sampled_from([0, 25, 110, 113]), message=st.one_of(st.none(), st.text(max_size=30)),
       member=st.one_of(st.none(), st.text(max_size=40)), epoch=st.integers(-2, 2**31 - 1),
       interval=st.integers(0, 60_000), assignment=assignments)
def test_fast_encoder_matches_kio(version, corr, error, message, member, epoch, interval, assignment):
    cls = response_class(68, version)
    built = None
    if assignment is not None:
        from kgroup.broker.groups.group_api import field_class
        acls = field_class(cls, "assignment")
        tp = item(acls, "topic_partitions")
        built = build(acls, topic_partitions=tuple(build(tp, topic_id=t, partitions=tuple(ps)) for t, ps in assignment))
    response = build(cls, throttle_time=0, error_code=error, error_message=message, member_id=member,
                     member_epoch=epoch, heartbeat_interval=interval, assignment=built)
    assert encode_consumer_group_heartbeat_response(corr, version, response) == kio_frame(corr, response)


@settings(max_examples=300, deadline=None)
@given(version=st.integers(0, 4), corr=st.integers(-2**31, 2**31 - 1),
       error=st.sampled_from([0, 15, 16, 22, 25, 27, 79, 82]), throttle=st.integers(0, 2**31 - 1))
def test_fast_heartbeat_encoder_matches_kio(version, corr, error, throttle):
    cls = response_class(12, version)
    fields = {"error_code": error} | ({"throttle_time": throttle} if version >= 1 else {})
    response = build(cls, **fields)
    expected = kio_frame(corr, response, header_tags=version >= 4)
    assert encode_heartbeat_response(corr, version, response) == expected
    # and the broker's encoder takes this path for the API
    header = RequestHeader(api_key=12, api_version=version, correlation_id=corr, client_id="c", flexible=version >= 4)
    assert encode_response(header, response) == expected


def test_every_served_version_under_a_ceiling_is_one_kio_knows():
    # The table's ceiling guards a later kio adding a version with another layout: such a
    # version must go to kio's writer, so a version the broker serves under the ceiling
    # must be one kio has (and which the tests here compare byte for byte).
    from kgroup.broker.concerns import SERVED
    from kgroup.wire.fast_responses import HAND_WRITTEN
    for api_key, (highest, _encoder) in HAND_WRITTEN.items():
        served = SERVED[api_key]
        assert served.min_version <= highest
        for version in range(served.min_version, min(highest, served.max_version) + 1):
            assert response_class(api_key, version).__api_key__ == api_key


commit_topics = st.lists(st.tuples(st.text(max_size=12), st.uuids(),
                                   st.lists(st.tuples(st.integers(0, 2**31 - 1),
                                                      st.sampled_from([0, 3, 25, 22, 27, 100])), max_size=30)),
                         max_size=4)


@settings(max_examples=300, deadline=None)
@given(version=st.integers(2, 10), corr=st.integers(-2**31, 2**31 - 1), throttle=st.integers(0, 2**31 - 1),
       topics=commit_topics)
def test_fast_offset_commit_encoder_matches_kio(version, corr, throttle, topics):
    from kgroup.wire.fast_responses import encode_offset_commit_response
    from kgroup.wire.kio_build import item

    cls = response_class(8, version)
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    key = "topic_id" if version >= 10 else "name"
    built = tuple(build(topic_cls, **{key: topic_id if version >= 10 else name},
                        partitions=tuple(build(part_cls, partition_index=p, error_code=e) for p, e in parts))
                  for name, topic_id, parts in topics)
    response = build(cls, topics=built, **({"throttle_time": throttle} if version >= 3 else {}))
    expected = kio_frame(corr, response, header_tags=version >= 8)
    assert encode_offset_commit_response(corr, version, response) == expected
    header = RequestHeader(api_key=8, api_version=version, correlation_id=corr, client_id="c", flexible=version >= 8)
    assert encode_response(header, response) == expected


texts = st.text(max_size=12)
int32s = st.lists(st.integers(-2**31, 2**31 - 1), max_size=6)
task_lists = st.one_of(st.none(), st.lists(st.tuples(texts, int32s), max_size=4))
topic_partitions = st.lists(st.tuples(texts, int32s), max_size=3)
endpoint_lists = st.one_of(st.none(), st.lists(
    st.tuples(texts, st.integers(0, 65_535), topic_partitions, topic_partitions), max_size=3))


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from([0, 1]), corr=st.integers(-2**31, 2**31 - 1),
       error=st.sampled_from([0, 25, 110, 113]), message=st.one_of(st.none(), st.text(max_size=30)),
       member=st.text(max_size=40), epoch=st.integers(-2, 2**31 - 1), intervals=st.tuples(
           st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)), lag=st.integers(-1, 2**63 - 1),
       status=st.one_of(st.none(), st.lists(st.tuples(st.integers(-128, 127), texts), max_size=3)),
       tasks=st.tuples(task_lists, task_lists, task_lists), required=st.booleans(),
       endpoint_epoch=st.integers(-2**31, 2**31 - 1), endpoints=endpoint_lists)
def test_fast_streams_heartbeat_encoder_matches_kio(version, corr, error, message, member, epoch, intervals, lag,
                                                   status, tasks, required, endpoint_epoch, endpoints):
    from kgroup.broker.groups.group_api import field_class
    cls = response_class(88, version)
    status_cls, tasks_cls = item(cls, "status"), item(cls, "active_tasks")
    e_cls = item(cls, "partitions_by_user_endpoint")
    ep_cls, tp_cls = field_class(e_cls, "user_endpoint"), item(e_cls, "active_partitions")

    def task_ids(given):
        return None if given is None else tuple(build(tasks_cls, subtopology_id=s, partitions=tuple(ps))
                                                for s, ps in given)

    def tps(given):
        return tuple(build(tp_cls, topic=t, partitions=tuple(ps)) for t, ps in given)
    response = build(
        cls, throttle_time=0, error_code=error, error_message=message, member_id=member, member_epoch=epoch,
        heartbeat_interval=intervals[0], task_offset_interval=intervals[1],
        acceptable_recovery_lag=lag if version >= 1 else min(lag, 2**31 - 1),
        status=None if status is None else tuple(build(status_cls, status_code=c, status_detail=d)
                                                 for c, d in status),
        active_tasks=task_ids(tasks[0]), standby_tasks=task_ids(tasks[1]), warmup_tasks=task_ids(tasks[2]),
        topology_description_required=required, endpoint_information_epoch=endpoint_epoch,
        partitions_by_user_endpoint=None if endpoints is None else tuple(
            build(e_cls, user_endpoint=build(ep_cls, host=h, port=p), active_partitions=tps(a),
                  standby_partitions=tps(sb)) for h, p, a, sb in endpoints))
    expected = kio_frame(corr, response)
    header = RequestHeader(api_key=88, api_version=version, correlation_id=corr, client_id="c", flexible=True)
    assert encode_response(header, response) == expected
