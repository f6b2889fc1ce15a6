"""The ConsumerGroupHeartbeat answer made directly equals the one `build` makes by name,
for every version the broker serves."""

from __future__ import annotations

import uuid

from hypothesis import given, settings, strategies as st

from kgroup.broker.groups.apis import APIS
from kgroup.broker.groups.group_api import consumer_heartbeat_answer, field_class
from kgroup.wire import response_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item

(SERVED,) = [api for api in APIS if api.key == ApiKey.CONSUMER_GROUP_HEARTBEAT]


@settings(max_examples=500, deadline=None)
@given(version=st.integers(SERVED.min_version, SERVED.max_version),
       error=st.sampled_from([0, 25, 110, 113, 136]), message=st.one_of(st.none(), st.text(max_size=10)),
       member=st.one_of(st.none(), st.text(max_size=10)), epoch=st.integers(-2, 2**31 - 1),
       interval=st.integers(0, 60_000),
       assignment=st.one_of(st.none(), st.lists(st.tuples(st.uuids(), st.lists(st.integers(0, 99))), max_size=3)))
def test_the_direct_answer_equals_builds(version, error, message, member, epoch, interval, assignment):
    cls = response_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, version)
    built = None
    if assignment is not None:
        acls = field_class(cls, "assignment")
        tp = item(acls, "topic_partitions")
        built = build(acls, topic_partitions=tuple(build(tp, topic_id=t, partitions=tuple(ps)) for t, ps in assignment))
    direct = consumer_heartbeat_answer(cls, error, message, member, epoch, interval, built)
    assert direct == build(cls, error_code=error, error_message=message, member_id=member, member_epoch=epoch,
                           heartbeat_interval=interval, assignment=built)
    assert type(direct.error_code) is type(build(cls, error_code=error).error_code)
