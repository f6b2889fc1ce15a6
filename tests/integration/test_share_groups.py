"""Share groups (KIP-932) with real share consumers in their own processes, on a real
`kgroup serve` and, to check the scenarios themselves, on librdkafka's mock cluster.

Every consumer is a process (share_consumer_process.py) so a test can freeze it (SIGSTOP)
or kill it (SIGKILL). The broker runs with a 5 s record lock and a delivery limit of 3
(`SHARE_SETTINGS`), as does the mock.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import time

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import wait_for
from tests.integration.share_clients import (
    LOCK_S,
    SHARE_SETTINGS,
    KgroupCluster,
    MockCluster,
    RawShareClient,
    ShareProc,
    delivered_once,
    produce,
    settle,
)

_names = itertools.count()


@pytest.fixture(scope="module")
def kgroup_broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("share") / "data", group=SHARE_SETTINGS).start()
    yield proc
    proc.finish()


@pytest.fixture(params=[("kgroup", "confluent"), ("kgroup", "kgroup"), ("mock", "confluent")],
                ids=["kgroup-confluent", "kgroup-ours", "mock-confluent"])
def cluster(request, kgroup_broker):
    """(cluster, share consumer): confluent-kafka's and ours on kgroup, and confluent-kafka's
    on librdkafka's mock cluster to check the scenario itself."""
    where, client = request.param
    if where == "kgroup":
        c = KgroupCluster(kgroup_broker)
        c.client = client
        yield c
    else:
        mock = MockCluster()
        mock.client = client
        yield mock
        mock.close()


def fresh(cluster, partitions: int) -> tuple[str, str]:
    n = next(_names)
    topic, group = f"share-t{n}", f"share-g{n}"
    cluster.create_topic(topic, partitions)
    return topic, group


@pytest.mark.parametrize("clients", [("confluent",) * 3, ("kgroup", "confluent", "kgroup")],
                         ids=["confluent", "ours-with-confluent"])
def test_kip932_three_members_on_two_partitions_take_every_record_once(kgroup_broker, clients):
    cluster = KgroupCluster(kgroup_broker)
    topic, group = fresh(cluster, 2)
    procs = [ShareProc(client, cluster.bootstrap, group, topic).wait_ready() for client in clients]
    sent = 0
    try:
        # Every member told its partitions at the group's last epoch before any record exists
        # (a topic the group is new to is assigned once its share partitions are initialized, a
        # heartbeat later, as in Kafka 4.4). Only "has partitions" was waited for once: a member
        # still holding its assignment of an earlier epoch fetched there, and under load the
        # others drained all 10,000 records before one member had fetched at all (stress pass
        # 3, seed 401058: [0, 8000, 2000]).
        wait_for(lambda: cluster.assigned_members(group, latest=True) == 3, 30,
                 what="three members told their partitions at the group's epoch")
        # Records until each member has some: the two members sharing a partition both get
        # some, however slowly one of them fetches. A member never given any fails below.
        deadline = time.monotonic() + 90
        while not all(p.records() for p in procs) and time.monotonic() < deadline:
            produce(cluster.bootstrap, topic, 10_000 if sent == 0 else 1_000, 2)
            sent += 10_000 if sent == 0 else 1_000
            wait_for(lambda: len(delivered_once(procs)) == sent, 120, what="every record delivered")
    finally:
        for p in procs:
            p.stop()
    counts = delivered_once(procs)
    assert sorted(counts) == [(p, o) for p in (0, 1) for o in range(sent // 2)]
    assert set(counts.values()) == {1}, "a record was delivered twice"
    assert all(p.records() for p in procs), [len(p.records()) for p in procs]
    # Closing sent the last implicit acknowledgements: every record is accepted (no lag; the
    # start offset DescribeShareGroupOffsets reads trails one change, as in Kafka 4.4).
    wait_for(lambda: cluster.lags(group) == {(topic, 0): 0, (topic, 1): 0}, 30,
             what="every record of both share partitions accepted")


def test_kip932_frozen_member_keeps_its_records_until_the_lock_expires(cluster):
    topic, group = fresh(cluster, 1)
    produce(cluster.bootstrap, topic, 50, 1)
    frozen = ShareProc(cluster.client, cluster.bootstrap, group, topic, "explicit", "hold").wait_ready()
    other = None
    try:
        wait_for(lambda: frozen.of("holding"), 30, what="the first member to take records")
        held = set(frozen.offsets())
        taken_at = min(e["t"] for e in frozen.records())
        frozen.signal(signal.SIGSTOP)
        other = ShareProc(cluster.client, cluster.bootstrap, group, topic, "explicit", "accept").wait_ready()
        wait_for(lambda: held <= other.done(), 60, what="the frozen member's records to reach the other")
        again = [e for e in other.records() if (e["p"], e["o"]) in held]
        assert min(e["t"] for e in again) - taken_at >= LOCK_S - 1.0, "delivered before the lock expired"
        assert sorted((e["p"], e["o"]) for e in again) == sorted(held), "not each exactly once"
        assert {e["count"] for e in again} == {2}
    finally:
        frozen.signal(signal.SIGCONT)
        frozen.kill()
        if other is not None:
            other.stop()


# Not on librdkafka's mock: its assignor gives a one-partition topic to one member of two (it
# rounds up), so there the other member gets the records only when the killed one's session
# expires, which is not the scenario.
@pytest.mark.parametrize("cluster", [("kgroup", "confluent"), ("kgroup", "kgroup")], indirect=True,
                         ids=["kgroup-confluent", "kgroup-ours"])
def test_kip932_killed_member_releases_its_records_at_once(cluster):
    topic, group = fresh(cluster, 1)
    produce(cluster.bootstrap, topic, 50, 1)
    doomed = ShareProc(cluster.client, cluster.bootstrap, group, topic, "explicit", "hold").wait_ready()
    wait_for(lambda: doomed.of("holding"), 30, what="the first member to take records")
    held = set(doomed.offsets())
    other = ShareProc(cluster.client, cluster.bootstrap, group, topic, "explicit", "accept").wait_ready()
    try:
        wait_for(lambda: cluster.members(group) == 2, 30, what="both members in the group")
        settle(1.0)
        assert not held & set(other.offsets()), "records held by a live member were delivered elsewhere"
        killed_at = time.time()
        doomed.kill()
        wait_for(lambda: held <= other.done(), LOCK_S * 4, what="the killed member's records to reach the other")
        again = [e for e in other.records() if (e["p"], e["o"]) in held]
        assert max(e["t"] for e in again) - killed_at < LOCK_S, "released only when the lock expired"
        assert sorted((e["p"], e["o"]) for e in again) == sorted(held), "not each exactly once"
    finally:
        other.stop()


def test_kip932_release_delivers_a_record_again_with_delivery_count_two(cluster):
    topic, group = fresh(cluster, 1)
    produce(cluster.bootstrap, topic, 20, 1)
    proc = ShareProc(cluster.client, cluster.bootstrap, group, topic, "explicit", "first-release").wait_ready()
    try:
        wait_for(lambda: len(proc.done("accept")) == 20, 60, what="every record accepted on its second delivery")
        settle(1.0)
    finally:
        proc.stop()
    counts = sorted((e["o"], e["count"]) for e in proc.records())
    assert counts == sorted([(o, 1) for o in range(20)] + [(o, 2) for o in range(20)])


def test_kip932_reject_archives_a_record(cluster):
    topic, group = fresh(cluster, 1)
    produce(cluster.bootstrap, topic, 20, 1)
    proc = ShareProc(cluster.client, cluster.bootstrap, group, topic, "explicit", "reject").wait_ready()
    try:
        wait_for(lambda: len(proc.done("reject")) == 20, 60, what="every record rejected")
        settle(LOCK_S + 1)
    finally:
        proc.stop()
    assert sorted(proc.offsets()) == [(0, o) for o in range(20)], "a rejected record came back"


def test_kip932_a_record_released_every_time_is_archived_at_the_delivery_limit(cluster):
    topic, group = fresh(cluster, 1)
    produce(cluster.bootstrap, topic, 10, 1)
    limit = SHARE_SETTINGS["share_delivery_count_limit"]
    proc = ShareProc(cluster.client, cluster.bootstrap, group, topic, "explicit", "release").wait_ready()
    try:
        wait_for(lambda: len(proc.records()) >= 10 * limit, 60, what="every record delivered to the limit")
        settle(2.0)
    finally:
        proc.stop()
    counts = sorted((e["o"], e["count"]) for e in proc.records())
    assert counts == sorted((o, c) for o in range(10) for c in range(1, limit + 1))


def test_kip932_share_configs_set_per_group_over_incremental_alter_configs_take_effect(kgroup_broker):
    """A group's own share.delivery.count.limit and share.record.lock.duration.ms, set with
    confluent-kafka's AdminClient on the GROUP resource, win over the broker's (3 and 5 s)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    cluster = KgroupCluster(kgroup_broker)
    topic, group = fresh(cluster, 1)
    produce(cluster.bootstrap, topic, 10, 1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    change = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.delivery.count.limit", "2", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.record.lock.duration.ms", "20000", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([change]).values():
        future.result(15)
    (described,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    shown = described.result(15)
    assert (shown["share.delivery.count.limit"].value, shown["share.record.lock.duration.ms"].value,
            shown["share.auto.offset.reset"].value) == ("2", "20000", "earliest")
    bad = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "sometimes", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(Exception, match="INVALID_CONFIG|String must be one of"):
        for future in admin.incremental_alter_configs([bad]).values():
            future.result(15)
    # Every record released each time it comes: archived after 2 deliveries, not 3.
    proc = ShareProc("confluent", cluster.bootstrap, group, topic, "explicit", "release").wait_ready()
    try:
        wait_for(lambda: len(proc.records()) >= 20, 60, what="every record delivered twice")
        settle(2.0)
    finally:
        proc.stop()
    assert sorted((e["o"], e["count"]) for e in proc.records()) == sorted((o, c) for o in range(10) for c in (1, 2))
    # The lock a member is given is the group's 20 s (ShareFetch's AcquisitionLockTimeoutMs).

    async def lock_given() -> int:
        async with RawShareClient(cluster.bootstrap, topic, group) as raw:
            await raw.join("lock-m")
            got = await raw.fetch("lock-m", 0)
            assert (await raw.fetch("lock-m", -1)).error_code == 0
            return got.acquisition_lock_timeout

    lock = asyncio.run(lock_given())
    assert getattr(lock, "total_seconds", lambda: lock / 1000)() == 20.0


def test_kip932_groups_tools_show_share_groups_and_reset_an_empty_one(kgroup_broker, capsys):
    from kgroup.cli.main import main

    def run(*argv: str) -> tuple[int, str, str]:
        status = main([*argv, "--bootstrap-server", kgroup_broker.bootstrap])
        out, err = capsys.readouterr()
        return status, out, err

    cluster = KgroupCluster(kgroup_broker)
    topic, group = fresh(cluster, 2)
    produce(cluster.bootstrap, topic, 100, 2)
    holder = ShareProc("confluent", cluster.bootstrap, group, topic, "explicit", "hold").wait_ready()
    try:
        wait_for(lambda: holder.of("holding"), 30, what="a member holding records")
        held = len(holder.records())
        status, out, _ = run("groups", "list", "--type", "share")
        assert status == 0 and (group, "Stable", "share") in {tuple(line.split()[:3]) for line in out.splitlines()}
        status, out, _ = run("groups", "describe", group, "--state")
        assert status == 0, out
        # GROUP  COORDINATOR (ID)  ASSIGNMENT-STRATEGY  STATE  #MEMBERS
        (row,) = [line.split() for line in out.splitlines() if line.startswith(group)]
        assert row[-3:] == ["simple", "Stable", "1"], out
        status, out, _ = run("groups", "describe", group, "--members", "--verbose")
        assert status == 0, out
        (member,) = [line.split() for line in out.splitlines() if line.startswith(group)]
        # ... #PARTITIONS MEMBER-EPOCH ASSIGNMENT, as kafka-share-groups --members --verbose shows
        assert (member[-3], member[-1]) == ("2", f"{topic}:0,1"), out
        status, out, _ = run("groups", "describe", group)                    # --offsets
        assert status == 0, out
        # kafka-share-groups --describe's columns: GROUP  TOPIC  PARTITION  START-OFFSET  LAG
        assert out.split()[:5] == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], out
        lines = {tuple(line.split()[1:]) for line in out.splitlines() if line.startswith(group)}
        # Nothing acknowledged yet: each share partition starts at 0 with a lag of its 50 records.
        assert lines == {(topic, "0", "0", "50"), (topic, "1", "0", "50")}, out
        status, out, _ = run("groups", "describe", group, "--format", "json")
        assert status == 0, out
        (doc,) = json.loads(out)["groups"]
        assert (doc["type"], doc["state"], doc["assignment_strategy"]) == ("share", "Stable", "simple")
        (m,) = doc["members"]
        assert m["partitions"] == [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}]
        assert [(o["topic"], o["partition"], o["start_offset"], o["log_end_offset"], o["lag"],
                 o["consumer_ids"]) for o in doc["offsets"]] == \
            [(topic, p, 0, 50, 50, [m["consumer_id"]]) for p in (0, 1)]
        assert held > 0
        status, _, err = run("groups", "reset-offsets", group, "--topic", topic, "--to-latest", "--execute")
        assert status != 0 and "inactive" in err
    finally:
        holder.kill()                                   # its connection closes: records released
    # The killed member stays in the group until its session (10 s here) expires.
    wait_for(lambda: "Empty" in run("groups", "describe", group, "--state")[1], 60,
             what="the share group to be empty")
    # Released, not acknowledged: the start offsets have not moved; a dry run changes nothing.
    status, out, err = run("groups", "reset-offsets", group, "--topic", topic, "--to-latest")
    assert status == 0 and "dry run" in err, err
    plan = {tuple(line.split()[1:5]) for line in out.splitlines() if line.startswith(group)}
    assert plan == {(topic, "0", "0", "50"), (topic, "1", "0", "50")}, out
    assert cluster.start_offsets(group) == {(topic, 0): 0, (topic, 1): 0}
    status, out, _ = run("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "30", "--execute")
    assert status == 0, out
    assert cluster.start_offsets(group) == {(topic, 0): 30, (topic, 1): 30}
    reader = ShareProc("confluent", cluster.bootstrap, group, topic, "explicit", "accept").wait_ready()
    try:
        wait_for(lambda: len(reader.done()) == 40, 30, what="the records after the new start offsets")
        settle(1.0)
    finally:
        reader.stop()
    assert sorted(reader.offsets()) == [(p, o) for p in (0, 1) for o in range(30, 50)]
    # delete-offsets: a share group's state goes per whole topic (DeleteShareGroupOffsets).
    wait_for(lambda: "Empty" in run("groups", "describe", group, "--state")[1], 60,
             what="the share group to be empty again")
    # Every record accepted (no lag; the start offsets read trail one change, as in Kafka 4.4).
    assert cluster.lags(group) == {(topic, 0): 0, (topic, 1): 0}
    kept = cluster.start_offsets(group)
    status, _, err = run("groups", "delete-offsets", group, "--topic", f"{topic}:0")
    assert status == 1 and "per topic" in err and f"--topic {topic}" in err, err
    assert cluster.start_offsets(group) == kept and cluster.lags(group) == {(topic, 0): 0, (topic, 1): 0}
    status, out, err = run("groups", "delete-offsets", group, "--topic", topic)
    assert status == 0, err
    assert [line.split() for line in out.splitlines()] == [["TOPIC", "STATUS"], [topic, "Successful"]]
    assert cluster.start_offsets(group) == {}


def test_kip932_group_admin_apis_know_share_groups_and_delete_them_when_empty(kgroup_broker):
    from kgroup.error_codes import ErrorCode as E

    cluster = KgroupCluster(kgroup_broker)
    topic, group = fresh(cluster, 2)
    produce(cluster.bootstrap, topic, 10, 2)

    async def scenario() -> None:
        from kgroup.client.admin import AdminClient

        async with RawShareClient(cluster.bootstrap, topic, group) as raw, AdminClient(cluster.bootstrap) as admin:
            await raw.join("admin-m")
            got = await raw.fetch("admin-m", 0)                  # creates partition 0's share state
            assert got.error_code == 0
            listed = await raw.call(16, states_filter=[], types_filter=["share"])
            assert (group, "share") in {(g.group_id, g.group_type) for g in listed.groups}
            consumers = await raw.call(16, states_filter=[], types_filter=["consumer"])
            assert group not in {g.group_id for g in consumers.groups}
            (described,) = (await raw.call(15, groups=[group], include_authorized_operations=False)).groups
            # DescribeGroups describes classic groups (and consumer groups); a share group is
            # Dead to it with no members, as in Kafka 4.4 (ShareGroupDescribe describes it).
            assert (described.error_code, described.protocol_type, described.group_state) == (0, "", "Dead")
            assert list(described.members) == []
            assert (await admin.describe_share_group(group)).members[0].member_id == "admin-m"
            # A share group with a member is not deleted, nor are its offsets.
            (busy,) = (await raw.call(42, groups_names=[group])).results
            assert busy.error_code == E.NON_EMPTY_GROUP
            busy_offsets = await raw.call(92, group_id=group, topics=[dict(topic_name=topic)])
            assert busy_offsets.error_code == E.NON_EMPTY_GROUP, busy_offsets
            assert (await raw.fetch("admin-m", -1)).error_code == 0
            assert (await raw.heartbeat("admin-m", -1, topics=None)).error_code == 0
            # Empty now: DeleteShareGroupOffsets drops the topic's share-partition state ...
            assert (topic, 0) in await admin.list_share_group_offsets(group)
            deleted = await raw.call(92, group_id=group, topics=[dict(topic_name=topic)])
            assert deleted.error_code == 0 and [r.error_code for r in deleted.responses] == [0], deleted
            assert await admin.list_share_group_offsets(group) == {}
            # ... and DeleteGroups deletes the group.
            (gone,) = (await raw.call(42, groups_names=[group])).results
            assert gone.error_code == 0
            listed = await raw.call(16, states_filter=[], types_filter=[])
            assert group not in {g.group_id for g in listed.groups}
            assert await admin.describe_share_group(group) is None

    asyncio.run(scenario())


def test_kip932_a_new_share_partition_starts_at_the_log_end_by_default(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()            # share_auto_offset_reset: latest
    try:
        cluster = KgroupCluster(broker)
        cluster.create_topic("late", 1)
        produce(broker.bootstrap, "late", 5, 1)

        async def scenario() -> tuple[list, list]:
            async with RawShareClient(broker.bootstrap, "late", "late-readers") as raw:
                await raw.join("reader")
                before = await raw.fetch("reader", 0)
                await asyncio.to_thread(produce, broker.bootstrap, "late", 3, 1)
                after = await raw.fetch("reader", 1)
                assert (await raw.fetch("reader", -1)).error_code == 0
                ranges = [[(int(r.first_offset), int(r.last_offset)) for t in resp.responses
                           for p in t.partitions for r in p.acquired_records] for resp in (before, after)]
                return ranges[0], ranges[1]

        before, after = asyncio.run(scenario())
    finally:
        broker.finish()
    assert before == [], "records produced before the share partition existed were delivered"
    assert after == [(5, 7)]


def test_kip1191_rejected_records_go_to_the_groups_dead_letter_topic(kgroup_broker, capsys):
    """confluent-kafka's share consumer rejects every record; the group names a dlq. topic with
    errors.deadletterqueue.group.enable=true: each record lands there with Kafka 4.4's headers
    (its value copied, as the group asks), and `kgroup groups describe` names the topic."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

    from kgroup.cli.main import main

    cluster = KgroupCluster(kgroup_broker)
    topic, group = fresh(cluster, 1)
    dlq = f"dlq.{topic}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(dlq, 1, 1, config={
            "errors.deadletterqueue.group.enable": "true"})]).values():
        future.result(15)
    change = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("errors.deadletterqueue.topic.name", dlq, incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("errors.deadletterqueue.copy.record.enable", "true", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([change]).values():
        future.result(15)
    produce(cluster.bootstrap, topic, 5, 1)
    proc = ShareProc("confluent", cluster.bootstrap, group, topic, "explicit", "reject").wait_ready()
    try:
        wait_for(lambda: len(proc.done("reject")) == 5, 60, what="every record rejected")
    finally:
        proc.stop()
    originals = {e["o"]: e for e in proc.records()}
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"{group}-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([dlq])
    got = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
    finally:
        consumer.close()
    assert len(got) == 5
    for m in got:
        headers = {k: v.decode() for k, v in m.headers()}
        offset = int(headers["__dlq.errors.offset"])
        assert m.key() is None and m.value() is not None and offset in originals
        assert headers == {"__dlq.errors.topic": topic, "__dlq.errors.partition": "0",
                           "__dlq.errors.offset": str(offset), "__dlq.errors.group": group,
                           "__dlq.errors.delivery.count": "1", "__dlq.errors.message": "Offset rejected by client."}
    assert sorted(int(dict(m.headers())["__dlq.errors.offset"]) for m in got) == [0, 1, 2, 3, 4]
    status = main(["groups", "describe", "--group", group, "--bootstrap-server", kgroup_broker.bootstrap])
    out, _ = capsys.readouterr()
    assert status == 0 and f"DEAD-LETTER-TOPIC {dlq}" in out
    status = main(["groups", "describe", "--group", group, "--format", "json",
                   "--bootstrap-server", kgroup_broker.bootstrap])
    out, _ = capsys.readouterr()
    assert status == 0 and json.loads(out)["groups"][0]["dead_letter_topic"] == dlq
