"""The StreamsGroupHeartbeat answer made directly equals the one `build` makes by name, for
every version the broker serves."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kgroup.broker.streams.apis import APIS
from kgroup.broker.streams.streams_group_api import streams_heartbeat_answer
from kgroup.wire import response_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item

(SERVED,) = [api for api in APIS if api.key == ApiKey.STREAMS_GROUP_HEARTBEAT]
tasks = st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=4), st.lists(st.integers(0, 99))), max_size=3))


@settings(max_examples=300, deadline=None)
@given(version=st.integers(SERVED.min_version, SERVED.max_version),
       error=st.sampled_from([0, 25, 110, 113]), message=st.one_of(st.none(), st.text(max_size=10)),
       member=st.text(max_size=10), epoch=st.integers(-2, 2**31 - 1), interval=st.integers(0, 60_000),
       offsets_interval=st.integers(0, 60_000), lag=st.integers(-1, 2**63 - 1),
       status=st.lists(st.tuples(st.integers(0, 7), st.text(max_size=10)), max_size=2),
       assigned=st.tuples(tasks, tasks, tasks), endpoint_epoch=st.integers(0, 2**31 - 1))
def test_the_direct_answer_equals_builds(version, error, message, member, epoch, interval, offsets_interval, lag,
                                         status, assigned, endpoint_epoch):
    cls = response_class(ApiKey.STREAMS_GROUP_HEARTBEAT, version)
    status_cls, tasks_cls = item(cls, "status"), item(cls, "active_tasks")
    built_status = tuple(build(status_cls, status_code=c, status_detail=d) for c, d in status)
    active, standby, warmup = (None if t is None else tuple(build(tasks_cls, subtopology_id=s, partitions=tuple(ps))
                                                            for s, ps in t) for t in assigned)
    direct = streams_heartbeat_answer(cls, version, error, message, member, epoch, interval, offsets_interval, lag,
                                      built_status, active, standby, warmup, endpoint_epoch, None)
    small = lag if version >= 1 else min(lag, 2**31 - 1)
    assert direct == build(cls, error_code=error, error_message=message, member_id=member, member_epoch=epoch,
                           heartbeat_interval=interval, task_offset_interval=offsets_interval,
                           acceptable_recovery_lag=small, status=built_status, active_tasks=active,
                           standby_tasks=standby, warmup_tasks=warmup, endpoint_information_epoch=endpoint_epoch,
                           partitions_by_user_endpoint=None)
    assert type(direct.error_code) is type(build(cls, error_code=error).error_code)
