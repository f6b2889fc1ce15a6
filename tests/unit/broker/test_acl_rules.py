"""The authorization table: a row for every API we serve, Kafka's refusals and filters on
real kio requests, and every refusal or finished response encodable at every version."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

import pytest

from kgroup.acl_bindings import AclBinding, AclOperation as Op, AclPermission as Perm
from kgroup.acl_bindings import PatternType as Pat, ResourceType as Res
from kgroup.broker.concerns import PREPARED_GUARDS, SERVED, TABLES
from kgroup.broker.security.authorization import Access, Admission, Refused
from kgroup.core.acls import AclSet, Authorizer
from kgroup.error_codes import ErrorCode as E
from kgroup.wire import RequestHeader, encode_request, encode_response, is_flexible, request_class, response_class
from kgroup.wire.kio_build import build, item
from kgroup.wire.versions import all_versions
from tests.unit.wire.wire_samples import SAMPLE_UUID, sample

# The guards of the API tables (every concern's apis.py), and those written for APIs not served yet.
RULES = {int(a.key): a.guard for table in TABLES for a in table if a.guard is not None} | {
    int(k): g for k, g in PREPARED_GUARDS.items()}
OPEN = frozenset(int(a.key) for table in TABLES for a in table if a.guard is None)

ALICE = "User:alice"
HOST = "10.1.1.1"


@dataclass
class Meta:
    topic_id: uuid.UUID


TOPICS = {"orders": Meta(uuid.uuid4()), "name-x": Meta(SAMPLE_UUID), "topic-x": Meta(uuid.uuid4())}


def allow(rtype: Res, name: str, op: Op, pattern: Pat = Pat.LITERAL, perm: Perm = Perm.ALLOW) -> AclBinding:
    return AclBinding(rtype, name, pattern, ALICE, "*", op, perm)


def access(*acls: AclBinding, super_user: bool = False) -> Access:
    authz = Authorizer(AclSet(frozenset(acls)), super_users=[ALICE] if super_user else [])
    return Access(authz, ALICE, HOST, lambda: TOPICS)


def header(api: int, version: int) -> RequestHeader:
    return RequestHeader(api, version, 7, "test", is_flexible(api, version))


def guard(api: int, version: int, request, acc: Access):
    return RULES[api](acc, header(api, version), request)


def test_every_served_api_has_an_authorization_row() -> None:
    missing = sorted(k for k in SERVED if k not in RULES and k not in OPEN)
    assert not missing, f"APIs served without an authorization guard in their apis.py: {missing}"


def _kio_versions(api: int) -> list[int]:
    from kio.index import load_request_schema

    out = []
    for version in range(20):
        try:
            load_request_schema(api, version)
        except Exception:
            continue
        out.append(version)
    return out


# Served APIs at the versions we serve; rows of APIs not served yet at every version kio has.
EVERY_ROW = [(k, v) for k, v in all_versions(SERVED.values()) if k in RULES] + [
    (k, v) for k in sorted(set(RULES) - set(SERVED)) for v in _kio_versions(k)]


@pytest.mark.parametrize("api,version", EVERY_ROW)
def test_every_answer_encodes_at_every_version(api: int, version: int) -> None:
    req = sample(request_class(api, version))
    resp = sample(response_class(api, version))
    h = header(api, version)
    for acc in (access(), access(super_user=True), access(allow(Res.TOPIC, "name-x", Op.ALL),
                                                          allow(Res.GROUP, "*", Op.DESCRIBE))):
        verdict = guard(api, version, req, acc)
        if isinstance(verdict, Refused):
            encode_response(h, verdict.response)
            continue
        assert isinstance(verdict, Admission)
        encode_request(api, version, 1, "c", verdict.request)
        if verdict.finish is not None:
            encode_response(h, verdict.finish(resp))


def test_super_user_passes_everything_untouched() -> None:
    for api, version in EVERY_ROW:
        req = sample(request_class(api, version))
        verdict = guard(api, version, req, access(super_user=True))
        assert isinstance(verdict, Admission) and verdict.request == req, (api, version)


@pytest.mark.parametrize("api", [11, 12, 13, 14])
def test_group_membership_apis_need_read_on_the_group(api: int) -> None:
    for version in range(SERVED[api].min_version, SERVED[api].max_version + 1):
        req = sample(request_class(api, version))
        refused = guard(api, version, req, access(allow(Res.GROUP, req.group_id, Op.DESCRIBE)))
        assert isinstance(refused, Refused) and refused.response.error_code == E.GROUP_AUTHORIZATION_FAILED
        ok = guard(api, version, req, access(allow(Res.GROUP, req.group_id, Op.READ)))
        assert isinstance(ok, Admission) and ok.request is req and ok.finish is None


def _commit(topics: list[str]):
    cls = request_class(8, 9)
    t_cls = item(cls, "topics")
    p_cls = item(t_cls, "partitions")
    return build(cls, group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=tuple(
        build(t_cls, name=t, partitions=(build(p_cls, partition_index=0, committed_offset=5),)) for t in topics))


def test_offset_commit_group_then_topics() -> None:
    req = _commit(["orders", "secret"])
    refused = guard(8, 9, req, access(allow(Res.TOPIC, "*", Op.READ)))
    assert isinstance(refused, Refused)
    assert {(t.name, p.error_code) for t in refused.response.topics for p in t.partitions} == {
        ("orders", E.GROUP_AUTHORIZATION_FAILED), ("secret", E.GROUP_AUTHORIZATION_FAILED)}
    admitted = guard(8, 9, req, access(allow(Res.GROUP, "g", Op.READ), allow(Res.TOPIC, "orders", Op.READ)))
    assert [t.name for t in admitted.request.topics] == ["orders"]
    served = build(response_class(8, 9), topics=(build(item(response_class(8, 9), "topics"), name="orders", partitions=(
        build(item(item(response_class(8, 9), "topics"), "partitions"), partition_index=0, error_code=0),)),))
    finished = admitted.finish(served)
    assert {(t.name, p.error_code) for t in finished.topics for p in t.partitions} == {
        ("orders", E.NONE), ("secret", E.TOPIC_AUTHORIZATION_FAILED)}


def test_deny_beats_allow_in_a_guard() -> None:
    acc = access(allow(Res.GROUP, "g", Op.ALL), allow(Res.GROUP, "g", Op.READ, perm=Perm.DENY))
    assert isinstance(guard(12, 4, sample(request_class(12, 4)).__class__(
        group_id="g", generation_id=1, member_id="m", group_instance_id=None), acc), Refused)


def test_fetch_by_topic_id_and_follower_fetches() -> None:
    req = replace(sample(request_class(1, 13)), replica_id=-1)  # a consumer; one topic by id: "name-x"
    verdict = guard(1, 13, req, access(allow(Res.TOPIC, "orders", Op.READ)))
    assert verdict.request.topics == ()
    done = verdict.finish(build(response_class(1, 13), responses=()))
    (topic,) = done.responses
    assert topic.topic_id == SAMPLE_UUID and topic.partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    sessionless = replace(req, session_epoch=-1)   # (an incremental fetch is checked again: see below)
    assert guard(1, 13, sessionless, access(allow(Res.TOPIC, "name", Op.READ, Pat.PREFIXED))).finish is None
    follower = sample(request_class(1, 12))  # replica_id 5: a broker's fetch
    refused = guard(1, 12, follower, access(allow(Res.TOPIC, "*", Op.ALL)))
    assert isinstance(refused, Refused)
    assert refused.response.responses[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED


def _metadata(names, auto=True, version=12):
    cls = request_class(3, version)
    return build(cls, topics=None if names is None else tuple(build(item(cls, "topics"), name=n) for n in names),
                 allow_auto_topic_creation=auto, include_topic_authorized_operations=True)


def test_metadata_hides_and_refuses_topics() -> None:
    cls = response_class(3, 12)
    t_cls = item(cls, "topics")
    every = build(cls, topics=tuple(build(t_cls, name=n, error_code=0, partitions=()) for n in ("orders", "topic-x")))
    acc = access(allow(Res.TOPIC, "orders", Op.READ))
    listed = guard(3, 12, _metadata(None), acc).finish(every)
    assert [t.name for t in listed.topics] == ["orders"]
    assert listed.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    # Named: undescribable, and unknown without CREATE, answer TOPIC_AUTHORIZATION_FAILED.
    verdict = guard(3, 12, _metadata(["orders", "topic-x", "new-topic"]), acc)
    assert [t.name for t in verdict.request.topics] == ["orders"]
    done = verdict.finish(build(cls, topics=(every.topics[0],)))
    assert {t.name: t.error_code for t in done.topics} == {
        "orders": E.NONE, "topic-x": E.TOPIC_AUTHORIZATION_FAILED, "new-topic": E.TOPIC_AUTHORIZATION_FAILED}
    creator = access(allow(Res.TOPIC, "new-", Op.CREATE, Pat.PREFIXED), allow(Res.TOPIC, "new-", Op.DESCRIBE, Pat.PREFIXED))
    assert [t.name for t in guard(3, 12, _metadata(["new-topic"]), creator).request.topics] == ["new-topic"]
    no_auto = guard(3, 12, _metadata(["new-topic"], auto=False), access(allow(Res.TOPIC, "*", Op.DESCRIBE)))
    assert [t.name for t in no_auto.request.topics] == ["new-topic"]  # the handler answers "unknown"


def test_list_groups_shows_only_describable_groups_kip231() -> None:
    cls = response_class(16, 5)
    g = item(cls, "groups")
    resp = build(cls, groups=tuple(build(g, group_id=n, protocol_type="consumer") for n in ("a", "b", "c")))
    req = sample(request_class(16, 5))
    only_b = guard(16, 5, req, access(allow(Res.GROUP, "b", Op.READ))).finish(resp)
    assert [x.group_id for x in only_b.groups] == ["b"]
    assert guard(16, 5, req, access(AclBinding(Res.CLUSTER, "kafka-cluster", Pat.LITERAL, ALICE, "*", Op.DESCRIBE,
                                               Perm.ALLOW))).finish is None


def test_describe_and_delete_groups_per_group() -> None:
    req = build(request_class(15, 5), groups=("mine", "theirs"), include_authorized_operations=True)
    acc = access(allow(Res.GROUP, "mine", Op.DESCRIBE))
    verdict = guard(15, 5, req, acc)
    assert verdict.request.groups == ("mine",)
    cls = response_class(15, 5)
    done = verdict.finish(build(cls, groups=(build(item(cls, "groups"), group_id="mine", error_code=0),)))
    assert [(x.group_id, x.error_code, x.authorized_operations) for x in done.groups] == [
        ("mine", E.NONE, 1 << Op.DESCRIBE), ("theirs", E.GROUP_AUTHORIZATION_FAILED, -(2**31))]
    dreq = build(request_class(42, 2), groups_names=("mine",))
    refused = guard(42, 2, dreq, acc)
    assert refused.request.groups_names == ()
    assert refused.finish(build(response_class(42, 2), results=())).results[0].error_code == E.GROUP_AUTHORIZATION_FAILED


def test_offset_fetch_v8_groups_and_all_topics() -> None:
    cls = request_class(9, 8)
    g_cls = item(cls, "groups")
    req = build(cls, groups=(build(g_cls, group_id="mine", topics=None), build(g_cls, group_id="theirs", topics=None)))
    acc = access(allow(Res.GROUP, "mine", Op.DESCRIBE), allow(Res.TOPIC, "orders", Op.DESCRIBE))
    verdict = guard(9, 8, req, acc)
    assert [g.group_id for g in verdict.request.groups] == ["mine"]
    rcls = response_class(9, 8)
    rg = item(rcls, "groups")
    rt = item(rg, "topics")
    served = build(rcls, groups=(build(rg, group_id="mine", topics=(
        build(rt, name="orders", partitions=()), build(rt, name="topic-x", partitions=()))),))
    done = verdict.finish(served)
    assert [(g.group_id, g.error_code, [t.name for t in g.topics]) for g in done.groups] == [
        ("mine", E.NONE, ["orders"]), ("theirs", E.GROUP_AUTHORIZATION_FAILED, [])]


def test_find_coordinator_by_key() -> None:
    acc = access(allow(Res.GROUP, "g", Op.DESCRIBE))
    old = build(request_class(10, 3), key="other", key_type=0)
    refused = guard(10, 3, old, acc)
    assert refused.response.error_code == E.GROUP_AUTHORIZATION_FAILED and refused.response.node_id == -1
    txn = build(request_class(10, 4), key_type=1, coordinator_keys=("t1",))
    done = guard(10, 4, txn, acc).finish(build(response_class(10, 4), coordinators=()))
    assert done.coordinators[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_init_producer_id_idempotent_needs_write_somewhere() -> None:
    req = build(request_class(22, 4), transactional_id=None, transaction_timeout=1000, producer_id=-1,
                producer_epoch=-1)
    refused = guard(22, 4, req, access(allow(Res.TOPIC, "orders", Op.READ)))
    assert refused.response.error_code == E.CLUSTER_AUTHORIZATION_FAILED and refused.response.producer_id == -1
    assert isinstance(guard(22, 4, req, access(allow(Res.TOPIC, "orders", Op.WRITE))), Admission)
    txn = build(request_class(22, 4), transactional_id="tx", transaction_timeout=1000, producer_id=-1,
                producer_epoch=-1)
    assert guard(22, 4, txn, access(allow(Res.TOPIC, "orders", Op.WRITE))).response.error_code == \
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_consumer_group_heartbeat_needs_describe_on_subscribed_topics() -> None:
    req = sample(request_class(68, 1))  # subscribes to "subscribed_topic_names-x"
    acc = access(allow(Res.GROUP, req.group_id, Op.READ))
    refused = guard(68, 1, req, acc)
    assert refused.response.error_code == E.TOPIC_AUTHORIZATION_FAILED
    acc = access(allow(Res.GROUP, req.group_id, Op.READ), allow(Res.TOPIC, "subscribed", Op.DESCRIBE, Pat.PREFIXED))
    assert isinstance(guard(68, 1, req, acc), Admission)


def test_create_topics_and_acl_admin_need_the_cluster_or_the_topic() -> None:
    cls = request_class(19, 7)
    req = build(cls, topics=(build(item(cls, "topics"), name="mine", num_partitions=1, replication_factor=1),
                             build(item(cls, "topics"), name="other", num_partitions=1, replication_factor=1)))
    verdict = guard(19, 7, req, access(allow(Res.TOPIC, "mine", Op.CREATE)))
    assert [t.name for t in verdict.request.topics] == ["mine"]
    acl_req = sample(request_class(30, 3))
    refused = guard(30, 3, acl_req, access(allow(Res.TOPIC, "*", Op.ALL)))
    assert [r.error_code for r in refused.response.results] == [E.CLUSTER_AUTHORIZATION_FAILED]
    scram = sample(request_class(51, 0))
    refused = guard(51, 0, scram, access())
    assert {r.error_code for r in refused.response.results} == {E.CLUSTER_AUTHORIZATION_FAILED}


# -- rows of APIs served later: transactions, configs, share groups --------------------------

def test_txn_offset_commit_needs_the_transactional_id_then_the_group_then_the_topics() -> None:
    req = sample(request_class(28, 3))
    acc = access(allow(Res.GROUP, req.group_id, Op.READ), allow(Res.TOPIC, "*", Op.READ))
    refused = guard(28, 3, req, acc)
    assert refused.response.topics[0].partitions[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    acc = access(allow(Res.TRANSACTIONAL_ID, req.transactional_id, Op.WRITE), allow(Res.TOPIC, "*", Op.READ))
    assert guard(28, 3, req, acc).response.topics[0].partitions[0].error_code == E.GROUP_AUTHORIZATION_FAILED
    acc = access(allow(Res.TRANSACTIONAL_ID, req.transactional_id, Op.WRITE), allow(Res.GROUP, req.group_id, Op.READ))
    narrowed = guard(28, 3, req, acc)
    assert narrowed.request.topics == ()


def test_add_partitions_to_txn_is_all_or_nothing() -> None:
    cls = request_class(24, 3)
    req = build(cls, v3_and_below_transactional_id="tx", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
                v3_and_below_topics=(build(item(cls, "v3_and_below_topics"), name="ok", partitions=(0,)),
                                     build(item(cls, "v3_and_below_topics"), name="no", partitions=(0, 1))))
    acc = access(allow(Res.TRANSACTIONAL_ID, "tx", Op.WRITE), allow(Res.TOPIC, "ok", Op.WRITE))
    refused = guard(24, 3, req, acc)
    assert {(t.name, p.partition_index, p.partition_error_code) for t in refused.response.results_by_topic_v3_and_below
            for p in t.results_by_partition} == {("ok", 0, E.OPERATION_NOT_ATTEMPTED),
                                                  ("no", 0, E.TOPIC_AUTHORIZATION_FAILED),
                                                  ("no", 1, E.TOPIC_AUTHORIZATION_FAILED)}
    brokers_only = guard(24, 4, sample(request_class(24, 4)), acc)
    assert brokers_only.response.error_code == E.CLUSTER_AUTHORIZATION_FAILED


def test_configs_are_checked_on_their_topic_group_or_the_cluster() -> None:
    cls = request_class(32, 4)
    r_cls = item(cls, "resources")
    req = build(cls, resources=(build(r_cls, resource_type=2, resource_name="orders"),
                                build(r_cls, resource_type=32, resource_name="g"),
                                build(r_cls, resource_type=4, resource_name="1")))
    verdict = guard(32, 4, req, access(allow(Res.TOPIC, "orders", Op.ALTER_CONFIGS)))
    assert [r.resource_name for r in verdict.request.resources] == ["orders"]
    done = verdict.finish(build(response_class(32, 4), results=()))
    assert [(r.resource_name, r.error_code) for r in done.results] == [
        ("g", E.GROUP_AUTHORIZATION_FAILED), ("1", E.CLUSTER_AUTHORIZATION_FAILED)]


def test_share_fetch_needs_read_on_the_group_and_each_topic() -> None:
    req = sample(request_class(78, 2))  # topic by SAMPLE_UUID = "name-x"
    assert guard(78, 2, req, access(allow(Res.TOPIC, "*", Op.READ))).response.error_code == E.GROUP_AUTHORIZATION_FAILED
    verdict = guard(78, 2, req, access(allow(Res.GROUP, req.group_id, Op.READ)))
    assert verdict.request.topics == ()
    done = verdict.finish(build(response_class(78, 2), responses=()))
    assert done.responses[0].topic_id == SAMPLE_UUID
    assert done.responses[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED


def test_kip227_an_incremental_fetch_checks_every_topic_its_session_answers() -> None:
    """A session's partitions are read without being listed: Kafka authorizes each of them
    on every fetch, so READ taken away mid-session answers TOPIC_AUTHORIZATION_FAILED."""
    cls = response_class(1, 12)
    t_cls = item(cls, "responses")
    p_cls = item(t_cls, "partitions")
    read = build(cls, session_id=5, responses=tuple(
        build(t_cls, topic=n, partitions=(build(p_cls, partition_index=0, high_watermark=3, records=b"x"),))
        for n in ("orders", "topic-x")))
    req = build(request_class(1, 12), replica_id=-1, session_id=5, session_epoch=2, topics=())
    done = guard(1, 12, req, access(allow(Res.TOPIC, "orders", Op.READ))).finish(read)
    assert [(t.topic, p.error_code, p.high_watermark, p.records) for t in done.responses for p in t.partitions] == [
        ("orders", E.NONE, 3, b"x"), ("topic-x", E.TOPIC_AUTHORIZATION_FAILED, -1, b"")]
    # A full fetch is checked by what it lists (the handler reads nothing else).
    full = replace(req, session_epoch=0)
    assert guard(1, 12, full, access(allow(Res.TOPIC, "orders", Op.READ))).finish is None
    # By topic id from v13.
    cls13 = response_class(1, 13)
    t13 = item(cls13, "responses")
    read13 = build(cls13, responses=(build(t13, topic_id=TOPICS["topic-x"].topic_id, partitions=(
        build(item(t13, "partitions"), partition_index=1, records=b"y"),)),))
    req13 = build(request_class(1, 13), replica_id=-1, session_id=5, session_epoch=2, topics=())
    done = guard(1, 13, req13, access(allow(Res.TOPIC, "orders", Op.READ))).finish(read13)
    assert done.responses[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
