"""Admin APIs: ListGroups, DescribeGroups, DeleteGroups, topics, configs (topic and group),
SCRAM users and ACLs on a broker without an authorizer."""

from __future__ import annotations

import hashlib
import hmac

from kgroup.conformance import observe
from kgroup.conformance.observe import settled
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import coordinated, ready, stable_member
from kgroup.conformance.scenarios.consumer_raw import hb, member_id
from kgroup.conformance.scenarios.offsets_raw import commit
from kgroup.conformance.scenarios.share_raw import set_group_configs, share_hb
from kgroup.conformance.target import Target

TOPIC, GROUP, BROKER = 2, 32, 4


def ours(listed, names: set[str]) -> list:
    """This run's groups of a ListGroups answer — the reference also serves other tests'
    groups ("other tests' groups")."""
    return [g for g in listed if g.group_id in names]


@scenario("admin", "ListGroups with state and type filters",
          rule="ListGroups lists every group kind with its state and type; v4 filters by state and v5 by "
               "type, both case-insensitively")
async def admin_list_groups(t: Target) -> None:
    classic, consumer, simple, share = (t.names.group(k) for k in ("classic", "consumer", "simple", "share"))
    raw = await ready(t, classic, 1)
    topic = t.names.topic()
    await stable_member(t, raw, classic)
    await observe.coordinator(raw, consumer)
    await observe.coordinator_sees(raw, consumer, {topic: 1})
    await t.ask(raw, "a consumer group", hb(consumer, member_id(t, "c"), 0, topics=[topic], owned=[]))
    await observe.coordinator(raw, simple)
    await t.ask(raw, "a group of simple commits", commit(8, simple, {(topic, 0): 1}))
    await observe.coordinator(raw, share)
    await t.ask(raw, "a share group", share_hb(share, member_id(t, "s"), 0, [topic]))
    names = {classic, consumer, simple, share}
    for label, version, states, types in (("all", 5, [], []), ("stable (v4)", 4, ["stable"], []),
                                          ("empty", 5, ["Empty"], []), ("consumer type", 5, [], ["consumer"]),
                                          ("classic type", 5, [], ["CLASSIC"]), ("share type", 5, [], ["share"]),
                                          ("all (v0)", 0, [], [])):
        r = await raw.call(request("ListGroups", version, states_filter=states, types_filter=types))
        t.add(f"list {label} (ListGroups v{version})", {"error_code": r.error_code,
                                                        "groups": ours(r.groups, names)})


@scenario("admin", "DescribeGroups and DeleteGroups of every kind",
          rule="DescribeGroups sees classic groups (others are Dead to it); DeleteGroups removes empty groups "
               "of any kind, NON_EMPTY_GROUP with members, GROUP_ID_NOT_FOUND for none")
async def admin_describe_delete_groups(t: Target) -> None:
    classic, consumer, share, missing = (t.names.group(k) for k in ("classic", "consumer", "share", "missing"))
    raw = await ready(t, classic, 1)
    topic = t.names.topic()
    await stable_member(t, raw, classic)
    for g in (consumer, share, missing):
        await observe.coordinator(raw, g)
    await observe.coordinator_sees(raw, consumer, {topic: 1})
    c = member_id(t, "c")
    r = await t.ask(raw, "a consumer member", hb(consumer, c, 0, topics=[topic], owned=[]))
    s = member_id(t, "s")
    await t.ask(raw, "a share member", share_hb(share, s, 0, [topic]))
    await t.ask(raw, "describe all four", request("DescribeGroups", 5, groups=[classic, consumer, share, missing],
                                                 include_authorized_operations=False))
    await t.ask(raw, "delete all four", request("DeleteGroups", 2, groups_names=[classic, consumer, share, missing]))
    await t.ask(raw, "the consumer member leaves", hb(consumer, c, -1))
    await t.ask(raw, "the share member leaves", share_hb(share, s, -1))
    await t.ask(raw, "delete them again", request("DeleteGroups", 2, groups_names=[consumer, share]))
    await t.ask(raw, "describe the consumer group", request("ConsumerGroupDescribe", 1, group_ids=[consumer],
                                                           include_authorized_operations=False))
    await t.ask(raw, "describe the share group", request("ShareGroupDescribe", 1, group_ids=[share],
                                                        include_authorized_operations=False))


@scenario("admin", "CreateTopics, CreatePartitions and DeleteTopics refusals",
          rule="an existing topic is TOPIC_ALREADY_EXISTS, a bad name INVALID_TOPIC_EXCEPTION, zero partitions "
               "INVALID_PARTITIONS, a replication factor above the brokers INVALID_REPLICATION_FACTOR; "
               "CreatePartitions cannot shrink; deleting an unknown topic is UNKNOWN_TOPIC_OR_PARTITION")
async def admin_topics(t: Target) -> None:
    raw = await t.raw()
    topic = t.names.topic()

    def create(name: str, partitions: int = 1, rf: int = 1, validate: bool = False, version: int = 4):
        # v4: the answer without the created topic's configs (admin_topic_config_names compares those)
        return request("CreateTopics", version, timeout_ms=30_000, validate_only=validate, topics=[{
            "name": name, "num_partitions": partitions, "replication_factor": rf, "assignments": [],
            "configs": []}])
    await t.ask(raw, "create", create(topic, 2))
    await observe.until(lambda: observe.topic_ready(raw, topic, 2), "the topic has leaders")
    await t.ask(raw, "create it again", create(topic, 2))
    await t.ask(raw, "validate only", create(t.names.topic("v"), 3, validate=True))
    await t.ask(raw, "a bad name", create(t.names.topic("bad/name")))
    await t.ask(raw, "zero partitions", create(t.names.topic("zero"), 0))
    await t.ask(raw, "replication factor 3", create(t.names.topic("rf3"), 1, 3))
    await t.ask(raw, "grow to 3 partitions", request("CreatePartitions", 3, timeout_ms=30_000, validate_only=False,
                                                     topics=[{"name": topic, "count": 3, "assignments": None}]))
    await t.ask(raw, "shrink to 1", request("CreatePartitions", 3, timeout_ms=30_000, validate_only=False,
                                            topics=[{"name": topic, "count": 1, "assignments": None}]))
    await t.ask(raw, "delete an unknown topic", request("DeleteTopics", 6, timeout_ms=30_000, topics=[
        {"name": t.names.topic("nope"), "topic_id": None}], topic_names=[t.names.topic("nope")]))
    await t.ask(raw, "delete", request("DeleteTopics", 6, timeout_ms=30_000, topics=[
        {"name": topic, "topic_id": None}], topic_names=[topic]))


@scenario("admin", "topic configs: describe and alter",
          rule="DescribeConfigs shows a topic's configs with their source (DYNAMIC_TOPIC_CONFIG when set, "
               "DEFAULT_CONFIG otherwise); IncrementalAlterConfigs sets and deletes them; an unknown config "
               "name or topic is refused")
async def admin_topic_configs(t: Target) -> None:
    raw = await t.raw()
    topic = t.names.topic()
    await t.ask(raw, "create with retention.ms", request("CreateTopics", 4, timeout_ms=30_000, topics=[{
        "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": [{"name": "retention.ms", "value": "3600000"}]}]))
    keys = ["retention.ms", "cleanup.policy", "max.message.bytes", "segment.bytes"]

    def describe(name: str):
        return request("DescribeConfigs", 4, include_synonyms=False, include_documentation=False, resources=[
            {"resource_type": TOPIC, "resource_name": name, "configuration_keys": keys}])
    await settled(raw, describe(topic), lambda r: int(r.results[0].error_code) == 0)
    await t.ask(raw, "describe", describe(topic))
    await t.ask(raw, "set cleanup.policy, delete retention.ms", request(
        "IncrementalAlterConfigs", 1, validate_only=False, resources=[{
            "resource_type": TOPIC, "resource_name": topic, "configs": [
                {"name": "cleanup.policy", "config_operation": 0, "value": "compact"},
                {"name": "retention.ms", "config_operation": 1, "value": None}]}]))
    await settled(raw, describe(topic), lambda r: any(
        c.name == "cleanup.policy" and c.value == "compact" for c in r.results[0].configs))
    await t.ask(raw, "describe after", describe(topic))
    await t.ask(raw, "an unknown config", request(
        "IncrementalAlterConfigs", 1, validate_only=False, resources=[{
            "resource_type": TOPIC, "resource_name": topic, "configs": [
                {"name": "no.such.config", "config_operation": 0, "value": "1"}]}]))
    await t.ask(raw, "a bad value", request(
        "IncrementalAlterConfigs", 1, validate_only=False, resources=[{
            "resource_type": TOPIC, "resource_name": topic, "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "soon"}]}]))
    await t.ask(raw, "describe an unknown topic", describe(t.names.topic("nope")))


@scenario("admin", "group configs: describe and alter (KIP-848/932)",
          rule="the GROUP config resource takes consumer.* and share.* configs within the broker's bounds; "
               "DescribeConfigs shows a group's own values and the defaults; out of bounds or unknown is "
               "INVALID_CONFIG")
async def admin_group_configs(t: Target) -> None:
    group = t.names.group()
    raw = await coordinated(t, group)
    keys = ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.record.lock.duration.ms",
            "share.delivery.count.limit", "share.auto.offset.reset"]

    def describe():
        return request("DescribeConfigs", 4, include_synonyms=False, include_documentation=False, resources=[
            {"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}])
    await t.ask(raw, "describe a group with no configs", describe())
    await t.ask(raw, "set two", set_group_configs(group, consumer_session_timeout_ms=20_000,
                                                  share_delivery_count_limit=3))
    await settled(raw, describe(), lambda r: any(
        c.name == "share.delivery.count.limit" and c.value == "3" for c in r.results[0].configs))
    await t.ask(raw, "describe", describe())
    await t.ask(raw, "a session timeout above the maximum", set_group_configs(group,
                                                                              consumer_session_timeout_ms=70_000))
    await t.ask(raw, "an unknown group config", set_group_configs(group, consumer_no_such_thing=1))
    await t.ask(raw, "a bad offset reset", set_group_configs(group, share_auto_offset_reset="middle"))
    await t.ask(raw, "delete one", request("IncrementalAlterConfigs", 1, validate_only=False, resources=[{
        "resource_type": GROUP, "resource_name": group, "configs": [
            {"name": "share.delivery.count.limit", "config_operation": 1, "value": None}]}]))
    await settled(raw, describe(), lambda r: any(
        c.name == "share.delivery.count.limit" and c.value != "3" for c in r.results[0].configs))
    await t.ask(raw, "describe after", describe())


def _scram(password: str, salt: bytes, iterations: int, digest: str) -> bytes:
    return hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)


@scenario("admin", "SCRAM credentials (KIP-554)",
          rule="AlterUserScramCredentials adds and removes SCRAM credentials; DescribeUserScramCredentials lists "
               "each user's mechanisms and iterations, RESOURCE_NOT_FOUND for a user without any; fewer than "
               "4096 iterations is UNACCEPTABLE_CREDENTIAL; deleting what is not there RESOURCE_NOT_FOUND")
async def admin_scram_users(t: Target) -> None:
    raw = await t.raw()
    user, other = t.names.client("alice"), t.names.client("bob")
    salt = b"0123456789abcdef"

    def upsert(name: str, mechanism: int, iterations: int):
        digest = "sha256" if mechanism == 1 else "sha512"
        return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt,
                "salted_password": _scram("secret", salt, iterations, digest)}
    await t.ask(raw, "two changes of one user in one request", request(
        "AlterUserScramCredentials", 0, deletions=[], upsertions=[upsert(user, 1, 4096), upsert(user, 2, 8192)]))
    await t.ask(raw, "add SCRAM-SHA-256", request("AlterUserScramCredentials", 0, deletions=[],
                                                  upsertions=[upsert(user, 1, 4096)]))
    await t.ask(raw, "add SCRAM-SHA-512", request("AlterUserScramCredentials", 0, deletions=[],
                                                  upsertions=[upsert(user, 2, 8192)]))
    await settled(raw, request("DescribeUserScramCredentials", 0, users=[{"name": user}]),
                  lambda r: len(r.results[0].credential_infos) == 2)
    await t.ask(raw, "describe", request("DescribeUserScramCredentials", 0, users=[{"name": user}, {"name": other}]))
    await t.ask(raw, "too few iterations", request("AlterUserScramCredentials", 0, deletions=[],
                                                   upsertions=[upsert(other, 1, 100)]))
    await t.ask(raw, "delete one", request("AlterUserScramCredentials", 0, upsertions=[],
                                           deletions=[{"name": user, "mechanism": 2}]))
    await t.ask(raw, "delete one that is not there", request("AlterUserScramCredentials", 0, upsertions=[],
                                                             deletions=[{"name": other, "mechanism": 1}]))
    await settled(raw, request("DescribeUserScramCredentials", 0, users=[{"name": user}]),
                  lambda r: len(r.results[0].credential_infos) == 1)
    await t.ask(raw, "describe after", request("DescribeUserScramCredentials", 0, users=[{"name": user}]))
    await t.ask(raw, "delete the last", request("AlterUserScramCredentials", 0, upsertions=[],
                                                deletions=[{"name": user, "mechanism": 1}]))


@scenario("admin", "ACL APIs without an authorizer",
          rule="on a broker without an authorizer CreateAcls, DescribeAcls and DeleteAcls answer SECURITY_DISABLED")
async def admin_acls_without_authorizer(t: Target) -> None:
    raw = await t.raw()
    group = t.names.group()
    await t.ask(raw, "create", request("CreateAcls", 3, creations=[{
        "resource_type": 3, "resource_name": group, "resource_pattern_type": 3, "principal": "User:alice",
        "host": "*", "operation": 3, "permission_type": 3}]))
    await t.ask(raw, "describe", request("DescribeAcls", 3, resource_type_filter=3, resource_name_filter=group,
                                         pattern_type_filter=3, principal_filter=None, host_filter=None,
                                         operation=1, permission_type=1))
    await t.ask(raw, "delete", request("DeleteAcls", 3, filters=[{
        "resource_type_filter": 3, "resource_name_filter": group, "pattern_type_filter": 3,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}]))


@scenario("admin", "the configs CreateTopics v5+ reports for a new topic",
          rule="CreateTopics v5+ answers each created topic with every topic config, its value and source")
async def admin_topic_config_names(t: Target) -> None:
    raw = await t.raw()
    r = await raw.call(request("CreateTopics", 7, timeout_ms=30_000, validate_only=True, topics=[{
        "name": t.names.topic(), "num_partitions": 1, "replication_factor": 1, "assignments": [],
        "configs": [{"name": "retention.ms", "value": "60000"}]}]))
    created = r.topics[0]
    t.add("error", created.error_code)
    t.add("configs", {c.name: (c.value, c.config_source, c.read_only, c.is_sensitive) for c in created.configs})
