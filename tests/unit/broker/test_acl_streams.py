"""The streams group APIs' authorization (broker/streams/guards.py), as Kafka 4.4's
KafkaApis checks it: READ on the group to heartbeat, DESCRIBE on every topic of a topology
sent on join, CREATE on the cluster or the topic for the internal topics the coordinator
creates; DESCRIBE on the group (and its topology's topics) to describe it."""

from __future__ import annotations

from kgroup.acl_bindings import AclOperation as Op, PatternType as Pat, ResourceType as Res
from kgroup.broker.security.authorization import Admission, Refused
from kgroup.broker.streams.streams_group_api import MAY_CREATE
from kgroup.error_codes import ErrorCode as E
from kgroup.wire import request_class, response_class
from kgroup.wire.kio_build import build, item
from kgroup.wire.kio_build import replace_fields as replaced
from tests.streams.raw import topology
from tests.unit.broker.test_acl_rules import access, allow, guard
from tests.unit.wire.wire_samples import sample

HEARTBEAT, DESCRIBE, TOPOLOGY_UPDATE = 88, 89, 93
TOPOLOGY = topology({"id": "0", "sources": ["words"], "sinks": ["app-rep-repartition"]},
                    {"id": "1", "repartition": ["app-rep-repartition"], "changelogs": ["app-counts-changelog"]})


def _join():
    return replaced(sample(request_class(HEARTBEAT, 1)), group_id="app", member_epoch=0, topology=TOPOLOGY)


def test_a_streams_heartbeat_needs_read_on_the_group() -> None:
    refused = guard(HEARTBEAT, 1, _join(), access(allow(Res.GROUP, "app", Op.DESCRIBE)))
    assert isinstance(refused, Refused) and refused.response.error_code == E.GROUP_AUTHORIZATION_FAILED


def test_a_join_needs_describe_on_every_topic_of_its_topology() -> None:
    acc = access(allow(Res.GROUP, "app", Op.READ), allow(Res.TOPIC, "words", Op.DESCRIBE))
    refused = guard(HEARTBEAT, 1, _join(), acc)
    assert isinstance(refused, Refused) and refused.response.error_code == E.TOPIC_AUTHORIZATION_FAILED
    acc = access(allow(Res.GROUP, "app", Op.READ), allow(Res.TOPIC, "words", Op.DESCRIBE),
                 allow(Res.TOPIC, "app-", Op.DESCRIBE, Pat.PREFIXED))
    assert isinstance(guard(HEARTBEAT, 1, _join(), acc), Admission)
    # A heartbeat without a topology needs READ on the group only.
    steady = replaced(_join(), member_epoch=3, topology=None)
    assert isinstance(guard(HEARTBEAT, 1, steady, access(allow(Res.GROUP, "app", Op.READ))), Admission)


def test_internal_topics_are_created_only_where_the_principal_may_create() -> None:
    describe_all = allow(Res.TOPIC, "*", Op.DESCRIBE)
    for acls, may in (
        ((), {"app-counts-changelog": False, "app-rep-repartition": False}),
        ((allow(Res.TOPIC, "app-counts-", Op.CREATE, Pat.PREFIXED),),
         {"app-counts-changelog": True, "app-rep-repartition": False}),
        ((allow(Res.CLUSTER, "kafka-cluster", Op.CREATE),), {"app-counts-changelog": True, "app-rep-repartition": True}),
    ):
        assert isinstance(guard(HEARTBEAT, 1, _join(), access(allow(Res.GROUP, "app", Op.READ), describe_all, *acls)),
                          Admission)
        predicate = MAY_CREATE.get()
        MAY_CREATE.set(None)
        assert {t: predicate(t) for t in may} == may


def _described(group_id: str):
    cls = response_class(DESCRIBE, 0)
    group = replaced(sample(item(cls, "groups")), group_id=group_id, error_code=0)
    return build(cls, throttle_time=0, groups=(group,))


def test_describe_needs_describe_on_the_group_and_on_its_topology_topics() -> None:
    req = build(request_class(DESCRIBE, 0), group_ids=("app", "other"), include_authorized_operations=False)
    acc = access(allow(Res.GROUP, "app", Op.DESCRIBE))
    admitted = guard(DESCRIBE, 0, req, acc)
    assert isinstance(admitted, Admission) and admitted.request.group_ids == ("app",)
    finished = admitted.finish(_described("app"))
    assert [(g.group_id, g.error_code) for g in finished.groups] == [
        ("app", E.TOPIC_AUTHORIZATION_FAILED), ("other", E.GROUP_AUTHORIZATION_FAILED)]
    assert finished.groups[0].members == () and finished.groups[0].topology is None
    acc = access(allow(Res.GROUP, "app", Op.DESCRIBE), allow(Res.TOPIC, "*", Op.DESCRIBE))
    finished = guard(DESCRIBE, 0, req, acc).finish(_described("app"))
    assert [(g.group_id, g.error_code) for g in finished.groups] == [("app", 0), ("other", E.GROUP_AUTHORIZATION_FAILED)]
    refused = guard(DESCRIBE, 0, req, access())
    assert isinstance(refused, Refused)
    assert [g.error_code for g in refused.response.groups] == [E.GROUP_AUTHORIZATION_FAILED] * 2


def test_a_topology_description_update_needs_read_on_the_group() -> None:
    req = replaced(sample(request_class(TOPOLOGY_UPDATE, 0)), group_id="app")
    refused = guard(TOPOLOGY_UPDATE, 0, req, access(allow(Res.GROUP, "app", Op.DESCRIBE)))
    assert isinstance(refused, Refused) and refused.response.error_code == E.GROUP_AUTHORIZATION_FAILED
    assert isinstance(guard(TOPOLOGY_UPDATE, 0, req, access(allow(Res.GROUP, "app", Op.READ))), Admission)
