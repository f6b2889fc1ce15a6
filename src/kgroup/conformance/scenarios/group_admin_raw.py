"""Typed group admin at the newest versions Kafka 4.4 serves (issue 29 item 3):
DescribeGroups v6, ListGroups v5, ConsumerGroupDescribe v1, ShareGroupDescribe v1 and
DeleteGroups v3, asked of groups of every kind (and of none)."""

from __future__ import annotations

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.admin_raw import ours
from kgroup.conformance.scenarios.classic_raw import join, ready, stable_member
from kgroup.conformance.scenarios.consumer_raw import hb, member_id
from kgroup.conformance.scenarios.offsets_raw import commit
from kgroup.conformance.scenarios.share_raw import share_hb
from kgroup.conformance.target import Target


def describe_groups(*groups: str):
    return request("DescribeGroups", 6, groups=list(groups), include_authorized_operations=False)


def consumer_group_describe(*groups: str):
    return request("ConsumerGroupDescribe", 1, group_ids=list(groups), include_authorized_operations=False)


def share_group_describe(*groups: str):
    return request("ShareGroupDescribe", 1, group_ids=list(groups), include_authorized_operations=False)


def delete_groups(*groups: str):
    return request("DeleteGroups", 3, groups_names=list(groups))


@scenario("admin", "typed group admin at the newest versions (DescribeGroups v6, DeleteGroups v3, "
                   "ConsumerGroupDescribe and ShareGroupDescribe v1)",
          rule="DescribeGroups v6 answers a group that is missing or not classic with GROUP_ID_NOT_FOUND and a "
               "message saying which; each typed describe answers GROUP_ID_NOT_FOUND for a group of another "
               "kind; ConsumerGroupDescribe v1 gives each member its type (a classic member of a consumer group "
               "included) and epochs; DeleteGroups v3 deletes empty groups of every kind")
async def admin_typed_groups_newest(t: Target) -> None:
    classic, consumer, share, simple, missing = (t.names.group(k) for k in
                                                 ("classic", "consumer", "share", "simple", "missing"))
    raw = await ready(t, classic, 1)
    topic = t.names.topic()
    await stable_member(t, raw, classic)
    for g in (consumer, share, simple, missing):
        await observe.coordinator(raw, g)
    await observe.coordinator_sees(raw, consumer, {topic: 1})
    c = member_id(t, "c")
    await t.ask(raw, "a consumer member", hb(consumer, c, 0, topics=[topic], owned=[]))
    # A classic member joins the consumer group (KIP-848's upgrade path), on a connection of
    # its own: its second JoinGroup may wait for the group's rebalance.
    classic_raw = await t.raw("classic")
    first = await t.ask(classic_raw, "a classic member asks to join the consumer group", join(5, consumer))
    second = join(5, consumer, first.member_id)
    joined = classic_raw.start(second)

    async def both_members() -> bool:
        described = await raw.call(consumer_group_describe(consumer))
        return len(described.groups[0].members) == 2
    await observe.until(both_members, "the classic member is in the consumer group")
    s = member_id(t, "s")
    joined_share = await t.ask(raw, "a share member", share_hb(share, s, 0, [topic]))

    async def share_assigned() -> bool:
        # Both brokers initialize the share partition and bump the group epoch a moment after
        # the join: the describes below wait for the member's assignment (not recorded).
        r = await raw.call(share_hb(share, s, int(joined_share.member_epoch)))
        return r.assignment is not None and bool(r.assignment.topic_partitions)
    await observe.until(share_assigned, "the share member is assigned the partition")
    await t.ask(raw, "simple commits", commit(8, simple, {(topic, 0): 1}))
    everyone = (classic, consumer, share, simple, missing)
    await t.ask(raw, "DescribeGroups v6 of every kind", describe_groups(*everyone))
    await t.ask(raw, "ConsumerGroupDescribe v1 of every kind", consumer_group_describe(*everyone))
    await t.ask(raw, "ShareGroupDescribe v1 of every kind", share_group_describe(*everyone))
    for label, states, types in (("stable consumer groups", ["Stable"], ["consumer"]),
                                 ("an unknown type", [], ["nonsense"]),
                                 ("an unknown state", ["nonsense"], []),
                                 ("empty classic groups", ["EMPTY"], ["classic"])):
        listed = await raw.call(request("ListGroups", 5, states_filter=states, types_filter=types))
        t.add(f"ListGroups v5: {label}", {"error_code": listed.error_code, "groups": ours(listed.groups,
                                                                                             set(everyone))})
    await t.ask(raw, "DeleteGroups v3 of every kind", delete_groups(*everyone))
    await t.answer("the classic member's join", joined, second)
    await t.ask(classic_raw, "the classic member leaves", request(
        "LeaveGroup", 5, group_id=consumer, members=[{"member_id": first.member_id, "group_instance_id": None,
                                                      "reason": None}]))
    await t.ask(raw, "the consumer member leaves", hb(consumer, c, -1))
    await t.ask(raw, "the share member leaves", share_hb(share, s, -1))
    await t.ask(raw, "DeleteGroups v3 of the emptied ones", delete_groups(share, simple))
    await t.ask(raw, "DescribeGroups v6 after", describe_groups(share, simple, consumer))
    await t.ask(raw, "ShareGroupDescribe v1 after", share_group_describe(share))


@scenario("security", "typed group admin and feature levels refused without ACLs", pair="secured",
          rule="without DESCRIBE on a group DescribeGroups v6 answers it GROUP_AUTHORIZATION_FAILED (an unknown "
               "group too), and so do ConsumerGroupDescribe and ShareGroupDescribe; ListGroups v5 lists only the "
               "groups the principal may DESCRIBE; DeleteGroups v3 needs DELETE; UpdateFeatures needs ALTER on "
               "the cluster (CLUSTER_AUTHORIZATION_FAILED)")
async def security_typed_group_admin(t: Target) -> None:
    group, missing = t.names.group(), t.names.group("missing")
    admin = await t.raw("admin", user="admin")
    await observe.coordinator(admin, group)
    await observe.create_topic(admin, t.names.topic(), 1)
    await t.ask(admin, "simple commits", commit(8, group, {(t.names.topic(), 0): 1}))
    alice = await t.raw("alice", user="alice")
    await t.ask(alice, "DescribeGroups v6", describe_groups(group, missing))
    await t.ask(alice, "ConsumerGroupDescribe v1", consumer_group_describe(group, missing))
    await t.ask(alice, "ShareGroupDescribe v1", share_group_describe(group, missing))
    listed = await alice.call(request("ListGroups", 5, states_filter=[], types_filter=[]))
    t.add("ListGroups v5", {"error_code": listed.error_code, "groups": ours(listed.groups, {group, missing})})
    await t.ask(alice, "DeleteGroups v3", delete_groups(group, missing))
    await t.ask(alice, "UpdateFeatures", request("UpdateFeatures", 1, timeout_ms=30_000, validate_only=True,
                                                 feature_updates=[{"feature": "group.version", "max_version_level": 1,
                                                                   "upgrade_type": 1}]))
