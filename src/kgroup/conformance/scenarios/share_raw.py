"""Share groups (KIP-932), asked with exact ShareGroupHeartbeat / ShareFetch /
ShareAcknowledge sequences."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.consumer_raw import member_id
from kgroup.conformance.target import Target

ACCEPT, RELEASE, REJECT = 1, 2, 3


def share_hb(group: str, member: str, epoch: int, topics: list[str] | None = None):
    return request("ShareGroupHeartbeat", 1, group_id=group, member_id=member, member_epoch=epoch,
                   rack_id=None, subscribed_topic_names=topics)


def set_group_configs(group: str, **configs: Any):
    """IncrementalAlterConfigs SET on the GROUP resource (share.auto_offset_reset -> share.auto.offset.reset)."""
    return request("IncrementalAlterConfigs", 1, validate_only=False, resources=[{
        "resource_type": 32, "resource_name": group, "configs": [
            {"name": name.replace("_", "."), "config_operation": 0, "value": str(value)}
            for name, value in configs.items()]}])


class RawShareMember:
    """One share-group member: its heartbeat, its share session and what it was given."""

    def __init__(self, t: Target, raw, group: str, name: str, topic_id) -> None:
        self.t, self.raw, self.group, self.topic_id = t, raw, group, topic_id
        self.member = member_id(t, name)
        self.name = name
        self.session_epoch = 0
        self.epoch = 0
        # Every member of this scenario on this broker: kept alive together while one waits.
        self.members: list[RawShareMember] = t.__dict__.setdefault("share_members", [])
        self.members.append(self)

    async def join(self, topics: list[str]) -> Any:
        r = await self.t.ask(self.raw, f"{self.name} joins", share_hb(self.group, self.member, 0, topics))

        async def assigned() -> Any:
            response = await self.raw.call(share_hb(self.group, self.member, int(r.member_epoch)))
            return response if response.assignment is not None and response.assignment.topic_partitions else None
        if r.assignment is None or not r.assignment.topic_partitions:
            r = await observe.until(assigned, f"{self.name} is assigned a partition")
            self.t.add(f"{self.name} assigned", r)
        self.epoch = int(r.member_epoch)
        return r

    def _fetch(self, acks: list[tuple[int, int, int]], max_wait_ms: int, max_records: int = 500):
        return request("ShareFetch", 1, group_id=self.group, member_id=self.member,
                       share_session_epoch=self.session_epoch, max_wait_ms=max_wait_ms, min_bytes=1,
                       max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
                       topics=[{"topic_id": self.topic_id, "partitions": [{
                           "partition_index": 0, "acknowledgement_batches": [
                               {"first_offset": f, "last_offset": last, "acknowledge_types": [kind]}
                               for f, last, kind in acks]}]}],
                       forgotten_topics_data=[])

    async def fetch(self, label: str, acks: list[tuple[int, int, int]] | None = None, *, wait_for: int = 0,
                    max_records: int = 500, max_wait_ms: int = 300) -> Any:
        """A ShareFetch in this member's session; `wait_for` records: fetch again (without
        writing into the transcript) until some arrive, then write that answer."""
        deadline = time.monotonic() + 40
        while True:
            req = self._fetch(acks or [], max_wait_ms if not wait_for else 1_000, max_records)
            r = await self.raw.call(req)
            self.session_epoch += 1
            acks = []
            got = delivered(r)
            if not wait_for or len(got["records"]) >= wait_for or time.monotonic() > deadline:
                self.t.add(f"{label} (ShareFetch v1)", {"error_code": r.error_code,
                                                       "acquisition_lock_timeout": r.acquisition_lock_timeout,
                                                       **got})
                return r
            # Still waiting (Kafka may take seconds to offer a released record again, longer under
            # load): keep every member alive past the share session timeout, as clients'
            # heartbeats would (not in the transcript).
            for m in self.members:
                hb = await m.raw.call(share_hb(m.group, m.member, m.epoch))
                if int(hb.error_code) == 0:
                    m.epoch = int(hb.member_epoch)

    async def acknowledge(self, label: str, acks: list[tuple[int, int, int]]) -> Any:
        r = await self.t.ask(self.raw, label, request(
            "ShareAcknowledge", 1, group_id=self.group, member_id=self.member,
            share_session_epoch=self.session_epoch, topics=[{"topic_id": self.topic_id, "partitions": [{
                "partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": f, "last_offset": last, "acknowledge_types": [kind]}
                    for f, last, kind in acks]}]}]))
        self.session_epoch += 1
        return r

    async def close(self) -> None:
        await self.t.ask(self.raw, f"{self.name} leaves", share_hb(self.group, self.member, -1))


def delivered(response: Any) -> dict[str, Any]:
    """What a ShareFetch answer delivers: the records, their acquired ranges with delivery
    counts, and each partition's error codes."""
    records, acquired, errors = [], [], []
    for topic in response.responses:
        for p in topic.partitions:
            errors.append((int(p.partition_index), p.error_code, int(p.acknowledge_error_code),
                           p.current_leader))
            acquired += [(int(a.first_offset), int(a.last_offset), int(a.delivery_count)) for a in p.acquired_records]
            records += observe.records_of(p.records)
    # A broker may hand over whole batches around what it acquired: what a client keeps is
    # what lies within the acquired ranges.
    inside = [r for r in records if any(f <= r["offset"] <= last for f, last, _ in acquired)]
    return {"records": inside, "acquired": acquired, "partitions": errors}


async def share_ready(t: Target, values: int = 4, **configs: Any) -> tuple[Any, str, str, Any]:
    """Group and topic (one partition, `values` records), earliest offset reset and `configs`."""
    group, topic = t.names.group(), t.names.topic()
    raw = await t.raw()
    await observe.group_topics(raw, group, {topic: 1})
    tid = await observe.topic_id(raw, topic)
    t.add("topic ids", {topic: tid})
    await t.ask(raw, "group configs", set_group_configs(group, share_auto_offset_reset="earliest", **configs))
    await observe.group_configs_visible(raw, group, share_auto_offset_reset="earliest", **configs)
    if values:
        await observe.produce(raw, topic, 0, [f"v{i}".encode() for i in range(values)])
    return raw, group, topic, tid


async def member_a_joined(t: Target, values: int = 4, member: type[RawShareMember] = RawShareMember,
                          **configs: Any) -> tuple[Any, str, str, Any]:
    """``share_ready``, then member A (a `member`) joined and assigned the partition."""
    raw, group, topic, tid = await share_ready(t, values, **configs)
    a = member(t, raw, group, "A", tid)
    await a.join([topic])
    return raw, group, topic, a


async def a_holds_four_beside_b(t: Target) -> tuple[Any, str, str, Any, RawShareMember, RawShareMember]:
    """Members A and B on the one partition of four records, A holding all four."""
    raw, group, topic, tid = await share_ready(t, values=4)
    a = RawShareMember(t, raw, group, "A", tid)
    b = RawShareMember(t, await t.raw("raw-b"), group, "B", tid)
    await a.join([topic])
    await b.join([topic])
    await a.fetch("A fetches", wait_for=4)
    return raw, group, topic, tid, a, b


@scenario("share", "acquire and accept",
          rule="a share member's ShareFetch acquires records (delivery count 1) under a lock; accepting them "
               "archives them: they are not delivered again and the start offset moves past them")
async def share_acquire_accept(t: Target) -> None:
    raw, group, topic, a = await member_a_joined(t)
    await a.fetch("first fetch", wait_for=4)
    await a.acknowledge("accept all", [(0, 3, ACCEPT)])
    await a.fetch("fetch again")
    t.add("offsets", await observe.share_offsets(raw, group, topic))
    t.add("describe", await observe.share_describe(raw, group))
    await a.close()


@scenario("share", "release: delivered again with delivery count 2",
          rule="records released by a member are available again and redelivered with their delivery count "
               "increased; acknowledgements ride on the next ShareFetch")
async def share_release(t: Target) -> None:
    raw, group, topic, a = await member_a_joined(t, values=3)
    await a.fetch("first fetch", wait_for=3)
    await a.fetch("accept 0, release 1-2 and fetch", [(0, 0, ACCEPT), (1, 2, RELEASE)], wait_for=2)
    await a.acknowledge("accept the redelivered", [(1, 2, ACCEPT)])
    await a.fetch("nothing left")
    await a.close()


@scenario("share", "reject: archived, never delivered again",
          rule="rejected records are archived at once: not redelivered, and the start offset moves past them")
async def share_reject(t: Target) -> None:
    raw, group, topic, a = await member_a_joined(t, values=3)
    await a.fetch("first fetch", wait_for=3)
    await a.acknowledge("reject 0, accept 1-2", [(0, 0, REJECT), (1, 2, ACCEPT)])
    await a.fetch("nothing left")
    t.add("offsets", await observe.share_offsets(raw, group, topic))
    await a.acknowledge("acknowledge an archived record", [(0, 0, ACCEPT)])
    await a.close()


@scenario("share", "lock expiry: unacknowledged records come back",
          rule="records not acknowledged within share.record.lock.duration.ms (a group config, here 1 s) "
               "are released and redelivered with delivery count 2 (timing within 2 s)")
async def share_lock_expiry(t: Target) -> None:
    raw, group, topic, a = await member_a_joined(t, values=2, share_record_lock_duration_ms=1_000)
    await a.fetch("first fetch", wait_for=2)
    acquired = time.monotonic()
    await a.fetch("redelivered after the lock expired", wait_for=2)
    t.timing("redelivery after the lock duration", time.monotonic() - acquired, 2.0)
    await a.acknowledge("late acknowledgement", [(0, 1, ACCEPT)])
    await a.close()


@scenario("share", "delivery count limit: archived after the last attempt",
          rule="a record released share.delivery.count.limit times (a group config, here 2) is archived "
               "instead of being delivered again")
async def share_delivery_limit(t: Target) -> None:
    raw, group, topic, a = await member_a_joined(t, values=1, share_delivery_count_limit=2)
    await a.fetch("first delivery", wait_for=1)
    await a.fetch("release; second delivery", [(0, 0, RELEASE)], wait_for=1)
    await a.fetch("release again; archived", [(0, 0, RELEASE)])
    t.add("offsets", await observe.share_offsets(raw, group, topic))
    await a.close()


@scenario("share", "two members on one partition",
          rule="the share assignor gives one partition to several members; a record acquired by one is not "
               "delivered to another until released")
async def share_two_members(t: Target) -> None:
    raw, group, topic, tid, a, b = await a_holds_four_beside_b(t)
    await b.fetch("B fetches while A holds everything")
    await a.acknowledge("A releases 2-3, accepts 0-1", [(0, 1, ACCEPT), (2, 3, RELEASE)])
    await b.fetch("B fetches the released", wait_for=2)
    t.add("describe", await observe.share_describe(raw, group))
    await b.acknowledge("B accepts", [(2, 3, ACCEPT)])
    await a.close()
    await b.close()


@scenario("share", "share-group heartbeats the coordinator refuses",
          rule="ShareGroupHeartbeat: unknown member UNKNOWN_MEMBER_ID, an epoch ahead FENCED_MEMBER_EPOCH, a "
               "join without subscription INVALID_REQUEST; ShareGroupDescribe of no group GROUP_ID_NOT_FOUND")
async def share_heartbeat_errors(t: Target) -> None:
    group, topic = t.names.group(), t.names.topic()
    raw = await t.raw()
    await observe.group_topics(raw, group, {topic: 1})
    member = RawShareMember(t, raw, group, "A", await observe.topic_id(raw, topic))
    a = member.member
    r = await member.join([topic])        # until its partition is assigned (initialized)
    await t.ask(raw, "an epoch from the future", share_hb(group, a, int(r.member_epoch) + 3))
    await t.ask(raw, "an unknown member", share_hb(group, member_id(t, "x"), 1))
    await t.ask(raw, "join without a subscription", share_hb(group, member_id(t, "y"), 0))
    await t.ask(raw, "join without a member id", share_hb(group, "", 0, [topic]))
    await t.ask(raw, "join with an empty group id", share_hb("", member_id(t, "z"), 0, [topic]))
    await t.ask(raw, "leave", share_hb(group, a, -1))
    await t.ask(raw, "heartbeat after leaving", share_hb(group, a, int(r.member_epoch)))
    t.add("describe", await observe.share_describe(raw, group))
    t.add("describe a group that does not exist", await observe.share_describe(raw, t.names.group("missing")))
    t.add("describe it with the classic API", await observe.describe(raw, group))


@scenario("share", "a partition forgotten from a share session, and a late acknowledgement",
          rule="KIP-932 share sessions: a member that forgets a partition from its share session (ShareFetch "
               "forgotten_topics_data) while it holds acquired records of it; what another member of the group "
               "fetches next, and what the first member's late ACCEPT of those records is answered")
async def share_forget_partition(t: Target) -> None:
    raw, group, topic, tid, a, b = await a_holds_four_beside_b(t)
    r = await a.raw.call(request(
        "ShareFetch", 1, group_id=group, member_id=a.member, share_session_epoch=a.session_epoch,
        max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500, topics=[],
        forgotten_topics_data=[{"topic_id": tid, "partitions": [0]}]))
    a.session_epoch += 1
    t.add("A forgets the partition (ShareFetch v1)", {"error_code": r.error_code, **delivered(r)})
    await b.fetch("B fetches")
    await a.acknowledge("A accepts what it held, late", [(0, 3, ACCEPT)])
    await b.fetch("B fetches again")
    await a.close()
    await b.close()


@scenario("share", "the simple share assignor is sticky",
          rule="Kafka 4.4's simple share assignor starts from the current targets: when members join, a member "
               "keeps as many of its partitions as its share allows, and when one leaves the others keep all "
               "they had (compared as how many partitions each member holds and keeps: which ones follows the "
               "topic's id, random on each broker)", timeout=90.0)
async def share_assignor_sticky(t: Target) -> None:
    group, topic = t.names.group(), t.names.topic()
    raw = await t.raw()
    await observe.group_topics(raw, group, {topic: 6})
    names = ["A", "B", "C", "D"]
    # Fixed ids (the group is the run's own): the assignor walks members in the order of their
    # ids' hash buckets, and where two ids share a bucket the order is the one they were put
    # in, which kgroup and Kafka need not share; these four never share one (8 or 16 buckets).
    ids = dict(zip(names, ("43bf7395-9869-5bb6-b823-2d9e7600cf76", "bc24185e-3659-5498-8fe6-0af83ce7cf4f",
                           "d0da27c9-acb9-5c72-b69a-7060717c561d", "ab95604a-7417-5df5-a163-29bd50a181d8")))
    epochs: dict[str, int] = {}
    before: dict[str, set[int]] = {}

    async def settle(step: str) -> None:
        async def steady() -> Any:
            for n in list(epochs):
                r = await raw.call(share_hb(group, ids[n], epochs[n]))
                epochs[n] = int(r.member_epoch)
            d = await observe.share_describe(raw, group)
            held = {m.member_id: {p for tp in m.assignment.topic_partitions for p in tp.partitions} for m in d.members}
            ok = (d.group_epoch == d.assignment_epoch and all(m.member_epoch == d.assignment_epoch for m in d.members)
                  and sum(map(len, held.values())) == 6)
            return held if ok else None
        held = await observe.until(steady, f"the share group settles after {step}")
        now = {n: held[ids[n]] for n in epochs}
        t.add(f"after {step}: held and kept per member",
              {n: (len(ps), len(ps & before.get(n, set()))) for n, ps in sorted(now.items())})
        before.clear()
        before.update(now)

    for n in names:
        r = await raw.call(share_hb(group, ids[n], 0, [topic]))
        epochs[n] = int(r.member_epoch)
        await settle(f"{n} joins")
    await raw.call(share_hb(group, ids["B"], -1))
    del epochs["B"]
    await settle("B leaves")


@scenario("share", "a subscribed topic grows: its initialized partitions stay assigned",
          rule="when a topic a share group consumes gains partitions, the group keeps assigning the partitions "
               "whose share state is initialized while the new ones are initialized, then assigns them too: a "
               "member never loses the topic in between (compared: the assignments the member goes through, "
               "and its epoch moved on by two, one for the new metadata and one for the initialization)",
          timeout=90.0)
async def share_topic_grows_keeps_initialized_partitions(t: Target) -> None:
    group, topic = t.names.group(), t.names.topic()
    raw = await t.raw()
    await observe.group_topics(raw, group, {topic: 2})
    member = member_id(t, "grows")
    held: list[int] = []
    epoch = [0]
    seen: list[list[int]] = []

    async def beat(partitions: int, names: list[str] | None = None) -> bool:
        r = await raw.call(share_hb(group, member, epoch[0], names))
        assert int(r.error_code) == 0, r
        epoch[0] = int(r.member_epoch)
        if r.assignment is not None:
            held[:] = sorted(p for tp in r.assignment.topic_partitions for p in tp.partitions)
        if not seen or seen[-1] != held:
            seen.append(list(held))
        return len(held) == partitions
    if not await beat(2, [topic]):
        await observe.until(lambda: beat(2), "the member holds both partitions")
    before = epoch[0]
    await t.ask(raw, "grow to 4 partitions", request("CreatePartitions", 3, timeout_ms=30_000, validate_only=False,
                                                     topics=[{"name": topic, "count": 4, "assignments": None}]))
    await observe.until(lambda: beat(4), "the member holds all four partitions", interval=0.05)
    t.add("assignments the member went through", seen)
    t.add("epochs moved on", epoch[0] - before)


@scenario("share", "a topic a share member subscribed to before it existed is created",
          rule="a share member may subscribe to a topic that does not exist yet; when it is created, the group's "
               "metadata moves the epoch on and, once the new topic's share partitions are initialized, the "
               "epoch moves again and the member is given them (compared: the assignments the member goes "
               "through and how far its epoch moved)", timeout=90.0)
async def share_subscribed_topic_created_later(t: Target) -> None:
    group, topic, later = t.names.group(), t.names.topic(), t.names.topic("later")
    raw = await t.raw()
    await observe.group_topics(raw, group, {topic: 1})
    member = member_id(t, "later")
    held: list[tuple[str, int]] = []
    epoch = [0]
    seen: list[list[tuple[str, int]]] = []
    names = {await observe.topic_id(raw, topic): "T"}

    async def beat(partitions: int, subscribe: list[str] | None = None) -> bool:
        r = await raw.call(share_hb(group, member, epoch[0], subscribe))
        assert int(r.error_code) == 0, r
        epoch[0] = int(r.member_epoch)
        if r.assignment is not None:
            held[:] = sorted((names.get(tp.topic_id, "L"), p) for tp in r.assignment.topic_partitions
                             for p in tp.partitions)
        if not seen or seen[-1] != held:
            seen.append(list(held))
        return len(held) == partitions
    if not await beat(1, [topic, later]):
        await observe.until(lambda: beat(1), "the member holds the first topic")
    before = epoch[0]
    await observe.create_topic(raw, later, 2)
    await observe.until(lambda: beat(3), "the member holds the new topic's partitions too", interval=0.05)
    t.add("assignments the member went through", seen)
    t.add("epochs moved on", epoch[0] - before)
