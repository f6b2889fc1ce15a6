"""A steady consumer heartbeat leaves a member's metadata as it was.

`ConsumerProtocol.merge` returns the old value untouched when the request carries nothing
new (group, member and epoch only); everything else goes through the general fold. The
short cut must give exactly what the fold gives, for every request and old value.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kgroup.core.consumer_protocol import ConsumerProtocol
from kgroup.core.messages import ConsumerGroupHeartbeatRequest
from kgroup.core.records import ConsumerMemberValue

names = st.sampled_from(["", "a", "b"])
maybe = st.one_of(st.none(), names)

old_values = st.one_of(st.none(), st.builds(
    ConsumerMemberValue,
    instance_id=maybe, rack_id=maybe, client_id=names, client_host=names,
    subscribed_topic_names=st.lists(st.sampled_from(["t", "u"]), max_size=2).map(tuple),
    subscribed_topic_regex=maybe, server_assignor=maybe,
    rebalance_timeout_ms=st.sampled_from([-1, 1000, 300_000]),
    classic_protocols=st.one_of(st.none(), st.just((("range", b"x"),))),
    classic_session_timeout_ms=st.sampled_from([-1, 45_000]),
))

requests = st.builds(
    ConsumerGroupHeartbeatRequest,
    group_id=st.just("g"), member_id=st.just("m"), member_epoch=st.integers(0, 3),
    instance_id=maybe, rack_id=maybe, rebalance_timeout_ms=st.sampled_from([-1, 1000]),
    subscribed_topic_names=st.one_of(st.none(), st.lists(st.sampled_from(["t", "u"]), max_size=2).map(tuple)),
    subscribed_topic_regex=maybe, server_assignor=maybe, client_id=names, client_host=names,
)

# merge reads nothing of the protocol's state: an instance without its shard will do.
PROTOCOL = object.__new__(ConsumerProtocol)

classic_joins = st.one_of(st.none(), st.just(((("range", b"x"),), 45_000)))


@settings(max_examples=2000, deadline=None)
@given(old=old_values, req=requests, classic=classic_joins)
def test_the_steady_heartbeat_short_cut_folds_exactly_as_the_general_path(old, req, classic):
    merged = PROTOCOL.merge(old, req, classic)
    assert merged == ConsumerProtocol._merged(old, req, classic)


def test_a_steady_heartbeat_returns_the_members_metadata_itself():
    old = ConsumerMemberValue("i", None, "c", "h", ("t",), None, None, 1000)
    req = ConsumerGroupHeartbeatRequest("g", "m", 3, client_id="c", client_host="h")
    assert PROTOCOL.merge(old, req, None) is old
