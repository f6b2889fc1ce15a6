"""On the secured pair (SCRAM users admin and alice, an authorizer, admin a super user; an
initial rebalance delay of 1.5 s and group.max.size 2): authentication, ACL enforcement,
the ACL APIs, and the two group settings the main pair runs without."""

from __future__ import annotations

import asyncio
import time

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.raw import RawClient
from kgroup.conformance.sasl import USERS, scram_login
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import join, sync
from kgroup.conformance.target import Target

GROUP_RESOURCE, TOPIC_RESOURCE, CLUSTER_RESOURCE = 3, 2, 4
LITERAL, PREFIXED, MATCH = 3, 4, 1
READ, ALL_OPS, ANY = 3, 2, 1
ALLOW = 3


def acl(resource_type: int, name: str, principal: str, operation: int, pattern: int = LITERAL) -> dict:
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": "*", "operation": operation, "permission_type": ALLOW}


@scenario("security", "SCRAM authentication", pair="secured",
          rule="SaslHandshake names the mechanisms on offer (UNSUPPORTED_SASL_MECHANISM otherwise); a wrong "
               "password is SASL_AUTHENTICATION_FAILED; a request before authenticating closes the connection")
async def security_scram_login(t: Target) -> None:
    plain = await RawClient.open(t.address, t.client_id("plain"))
    t._raws.append(plain)
    await t.ask(plain, "handshake with PLAIN", request("SaslHandshake", 1, mechanism="PLAIN"))
    wrong = await t.raw("wrong")
    t.add("alice with a wrong password", await scram_login(wrong, "alice", "nope", t=t, label="wrong password: "))
    await t.ask(wrong, "a request after the failure", request("ApiVersions", 3, client_software_name="x",
                                                             client_software_version="1"))
    ok = await t.raw("ok")
    t.add("alice with her password", await scram_login(ok, "alice", USERS["alice"], "SCRAM-SHA-512", t=t,
                                                       label="SCRAM-SHA-512: "))
    early = await t.raw("early")
    await t.ask(early, "Metadata before authenticating", request("Metadata", 12, topics=[],
                                                                 allow_auto_topic_creation=False))


@scenario("security", "ACLs on groups and topics", pair="secured",
          rule="without an ACL alice's FindCoordinator and JoinGroup are GROUP_AUTHORIZATION_FAILED; READ on the "
               "group lets her join; committing a topic she may not READ is TOPIC_AUTHORIZATION_FAILED until an "
               "ACL allows it")
async def security_group_acls(t: Target) -> None:
    group, topic = t.names.group(), t.names.topic()
    admin = await t.raw("admin", user="admin")
    await observe.coordinator(admin, group)
    await observe.create_topic(admin, topic, 1)
    alice = await t.raw("alice", user="alice")
    await t.ask(alice, "FindCoordinator", request("FindCoordinator", 4, key_type=0, coordinator_keys=[group]))
    await t.ask(alice, "JoinGroup", join(5, group))
    await t.ask(admin, "allow alice to READ the group", request("CreateAcls", 3, creations=[
        acl(GROUP_RESOURCE, group, "User:alice", READ)]))
    await until_allowed(alice, group)
    r = await t.ask(alice, "JoinGroup once allowed", join(5, group))
    r = await t.ask(alice, "JoinGroup with the id", join(5, group, r.member_id))
    await t.ask(alice, "SyncGroup", sync(3, group, int(r.generation_id), r.member_id, assignments={r.member_id: b""}))
    commit = request("OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=int(r.generation_id),
                     member_id=r.member_id, group_instance_id=None, topics=[{"name": topic, "partitions": [
                         {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                          "committed_metadata": ""}]}])
    await t.ask(alice, "OffsetCommit to a topic she may not read", commit)
    await t.ask(admin, "allow alice to READ topics by prefix", request("CreateAcls", 3, creations=[
        acl(TOPIC_RESOURCE, t.names.prefix, "User:alice", READ, PREFIXED)]))

    async def topic_allowed() -> bool:
        answer = await alice.call(commit)
        return int(answer.topics[0].partitions[0].error_code) != 29
    await observe.until(topic_allowed, "alice may read the topic")
    await t.ask(alice, "OffsetCommit once allowed", commit)
    await t.ask(alice, "LeaveGroup", request("LeaveGroup", 3, group_id=group, members=[
        {"member_id": r.member_id, "group_instance_id": None}]))


async def until_allowed(raw: RawClient, group: str) -> None:
    """Kafka applies an ACL through its controller: wait (unrecorded) until it holds."""
    async def allowed() -> bool:
        r = await raw.call(request("FindCoordinator", 4, key_type=0, coordinator_keys=[group]))
        return int(r.coordinators[0].error_code) != 30
    await observe.until(allowed, f"the ACL on {group} holds")


@scenario("security", "CreateAcls, DescribeAcls, DeleteAcls", pair="secured",
          rule="a super user creates, lists (by filter) and deletes ACL bindings; a principal without ALTER on the "
               "cluster gets CLUSTER_AUTHORIZATION_FAILED")
async def security_acl_apis(t: Target) -> None:
    admin = await t.raw("admin", user="admin")
    prefix = t.names.prefix
    bindings = [acl(GROUP_RESOURCE, f"{prefix}-g", "User:bob", READ),
                acl(TOPIC_RESOURCE, f"{prefix}-", "User:bob", READ, PREFIXED),
                acl(TOPIC_RESOURCE, f"{prefix}-t", "User:carol", ALL_OPS)]
    await t.ask(admin, "create three", request("CreateAcls", 3, creations=bindings))

    def describe(**filters):
        return request("DescribeAcls", 3, **{"resource_type_filter": ANY, "resource_name_filter": None,
                                             "pattern_type_filter": MATCH, "principal_filter": None,
                                             "host_filter": None, "operation": ANY, "permission_type": ANY,
                                             **filters})
    await observe.until(lambda: _listed(admin, describe(principal_filter="User:bob"), 2), "the ACLs are listed")
    await t.ask(admin, "bob's bindings", describe(principal_filter="User:bob"))
    await t.ask(admin, "what matches topic -t", describe(resource_type_filter=TOPIC_RESOURCE,
                                                          resource_name_filter=f"{prefix}-t"))
    await t.ask(admin, "delete carol's", request("DeleteAcls", 3, filters=[{
        "resource_type_filter": ANY, "resource_name_filter": None, "pattern_type_filter": MATCH,
        "principal_filter": "User:carol", "host_filter": None, "operation": ANY, "permission_type": ANY}]))
    alice = await t.raw("alice", user="alice")
    await t.ask(alice, "alice creates an ACL", request("CreateAcls", 3, creations=[
        acl(GROUP_RESOURCE, f"{prefix}-x", "User:alice", READ)]))
    await t.ask(alice, "alice lists ACLs", describe())
    await t.ask(admin, "delete bob's", request("DeleteAcls", 3, filters=[{
        "resource_type_filter": ANY, "resource_name_filter": None, "pattern_type_filter": MATCH,
        "principal_filter": "User:bob", "host_filter": None, "operation": ANY, "permission_type": ANY}]))


async def _listed(raw: RawClient, req, count: int) -> bool:
    r = await raw.call(req)
    return sum(len(x.acls) for x in r.resources) >= count


@scenario("classic", "initial rebalance delay", pair="secured",
          rule="the first join to an Empty group waits group.initial.rebalance.delay.ms (here 1.5 s), extended "
               "for each newcomer within it: two members 0.5 s apart land in one generation (timing within 1 s)")
async def classic_initial_delay(t: Target) -> None:
    group = t.names.group()
    a, b = await t.raw("a", user="admin"), await t.raw("b", user="admin")
    await observe.coordinator(a, group)
    first = await t.ask(a, "A join", join(5, group))
    started = time.monotonic()
    a_req = join(5, group, first.member_id)
    a_join = a.start(a_req)
    await asyncio.sleep(0.5)
    second = await t.ask(b, "B join", join(5, group))
    b_req = join(5, group, second.member_id)
    b_join = b.start(b_req)
    ra = await t.answer("A joined", a_join, a_req)
    t.timing("the first generation forms after the delays", time.monotonic() - started, 1.0)
    await t.answer("B joined", b_join, b_req)
    await t.ask(a, "A syncs", sync(3, group, int(ra.generation_id), ra.member_id, assignments={
        ra.member_id: b"", second.member_id: b""}))
    t.add("describe", await observe.describe(a, group))


@scenario("classic", "group full: group.max.size", pair="secured",
          rule="a member joining a group already at group.max.size (here 2) gets GROUP_MAX_SIZE_REACHED")
async def classic_group_full(t: Target) -> None:
    group = t.names.group()
    raws = [await t.raw(f"m{i}", user="admin") for i in range(3)]
    await observe.coordinator(raws[0], group)
    firsts = [await t.ask(raw, f"member {i} join", join(5, group)) for i, raw in enumerate(raws)]
    reqs = [join(5, group, f.member_id) for f in firsts]
    tasks = []
    for raw, req in zip(raws, reqs):          # one after the other, in this order
        tasks.append(raw.start(req))
        await asyncio.sleep(0.2)
    for i, (task, req) in enumerate(zip(tasks, reqs)):
        await t.answer(f"member {i} joined", task, req)
    t.add("describe", await observe.describe(raws[0], group))
