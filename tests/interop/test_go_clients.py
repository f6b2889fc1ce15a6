"""The Go clients against kgroup: franz-go (kgo: classic groups, KIP-848 groups with its
ServerSideBalancer, static members, share groups, idempotent and transactional producers,
GroupTransactSession; kadm admin calls) and sarama (consumer groups, static members, the sync
producer, idempotent and transactional; offsets through an OffsetManager and the
ClusterAdmin). tests/go/ holds the program, built once by `make go-clients`."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.interop.go import go_process, go_run, results
from tests.interop.helpers import eventually, no_partition_owned_twice, past_start

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def go(go_build):
    return go_build / "interop"


def produce(go, kgroup, topic: str, count: int, partitions: int, **flags) -> list[list]:
    events = go_run(go, "franz-produce", brokers=kgroup.bootstrap, topic=topic, count=count,
                    partitions=partitions, **flags)
    [done] = [e for e in events if e["event"] == "produced"]
    assert all(r[3] is None for r in done["records"]), done
    return done["records"]


def kadm(go, kgroup, *calls, **flags) -> dict[str, list]:
    return results(go_run(go, "kadm", brokers=kgroup.bootstrap, script=json.dumps(list(calls)), **flags))


def share_group_from_the_start(kgroup, group: str) -> None:
    """share.auto.offset.reset=earliest, a group config (kgroup's own admin client sets it:
    kadm has no helper for GROUP resources)."""
    import asyncio

    from kgroup.client.admin import CONFIG_SET, GROUP_RESOURCE, AdminClient

    async def configure():
        async with AdminClient(kgroup.bootstrap) as admin:
            await admin.alter_configs(GROUP_RESOURCE, group, [("share.auto.offset.reset", CONFIG_SET, "earliest")])

    asyncio.run(configure())


def values(*procs) -> list[str]:
    return sorted(r[4] for p in procs for r in p.records())


def stop(*procs) -> None:
    for p in procs:
        p.stop()


# ---- franz-go ---------------------------------------------------------------------------------

def test_franz_classic_cooperative_sticky_group(go, kgroup, name):
    topic, group = f"fc-{name}", f"fc-{name}"
    kgroup.create_topic(topic, 4)
    produce(go, kgroup, topic, 40, 4)
    a = go_process(go, "a", "franz-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                   balancer="cooperative-sticky")
    b = None
    try:
        eventually(lambda: len(a.owned()) == 4, what=f"a owns all four: {a.tail()}")
        b = go_process(go, "b", "franz-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                       balancer="cooperative-sticky")
        eventually(lambda: len(a.owned()) == 2 and len(b.owned()) == 2, what=f"2 and 2: {b.tail()}")
        revoked = [tuple(p) for e in a.of("revoked") for p in e["partitions"]]
        assert sorted(revoked) == sorted(b.owned())                # only what moved was revoked
        eventually(lambda: len(values(a, b)) >= 40)
        view = kgroup.group(group)
        assert (view["kind"], view["state"], view["protocol"]) == ("classic", "Stable", "cooperative-sticky")
        eventually(lambda: kadm(go, kgroup, ["fetchOffsets", group])["fetchOffsets"][0]
                   == {f"{topic}:{p}": 10 for p in range(4)})
    finally:
        stop(*(p for p in (a, b) if p))
    no_partition_owned_twice(sorted(a.events + b.events, key=lambda e: e["ts"]))
    assert sorted(set(values(a, b))) == sorted(f"v{i}" for i in range(40))


def test_franz_consumer_protocol_group(go, kgroup, name):
    topic, group = f"fn-{name}", f"fn-{name}"
    kgroup.create_topic(topic, 4)
    produce(go, kgroup, topic, 20, 4)
    members = [go_process(go, m, "franz-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                          protocol="consumer", balancer="range", rack=f"rack-{m}") for m in ("a", "b")]
    try:
        eventually(lambda: sorted(len(m.owned()) for m in members) == [2, 2], timeout=60,
                   what=f"2 and 2: {members[0].tail()} {members[1].tail()}")
        described = kadm(go, kgroup, ["describeConsumerGroups", group])["describeConsumerGroups"][0]
        assert described["state"] == "Stable" and described["assignor"] == "range"
        assert all(m["assignment"] == m["target"] and m["epoch"] == described["epoch"] for m in described["members"])
        eventually(lambda: len(set(values(*members))) == 20)
    finally:
        stop(*members)
    no_partition_owned_twice(sorted((e for m in members for e in m.events), key=lambda e: e["ts"]))


def test_franz_static_member_comes_back_to_its_partitions(go, kgroup, name):
    topic, group = f"fs-{name}", f"fs-{name}"
    kgroup.create_topic(topic, 4)
    a = go_process(go, "a", "franz-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                   balancer="range", instance="static-a")
    b = go_process(go, "b", "franz-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                   balancer="range", instance="static-b")
    a2 = None
    try:
        eventually(lambda: len(a.owned()) == 2 and len(b.owned()) == 2, timeout=60)
        mine, generation = a.owned(), kgroup.group(group)["generation"]
        # b may have held all four before a joined (the two joins can fall in two rebalances):
        # what counts is that a's restart revokes nothing more.
        settled = len(b.of("revoked"))
        a.stop()                                                    # a static member's close does not leave
        a2 = go_process(go, "a2", "franz-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                        balancer="range", instance="static-a")
        eventually(lambda: a2.owned() == mine, what="static-a gets its partitions back")
        assert kgroup.group(group)["generation"] == generation     # no rebalance
        assert b.of("revoked")[settled:] == []
    finally:
        stop(*(p for p in (a, b, a2) if p))


def test_franz_share_consumers(go, kgroup, name):
    topic, group = f"fsh-{name}", f"fsh-{name}"
    kgroup.create_topic(topic, 2)
    share_group_from_the_start(kgroup, group)
    produce(go, kgroup, topic, 30, 2)
    consumers = [go_process(go, m, "franz-share", brokers=kgroup.bootstrap, group=group, topic=topic, max=15)
                 for m in ("s1", "s2")]
    explicit = None
    try:
        eventually(lambda: len(values(*consumers)) >= 30, what=f"30 records: {consumers[0].tail()}")
        stop(*consumers)
        deliveries = Counter((r[1], r[2]) for c in consumers for r in c.records())
        assert len(deliveries) == 30 and max(deliveries.values()) == 1
        offsets = kadm(go, kgroup, ["describeShareGroupOffsets", group])["describeShareGroupOffsets"][0]
        assert past_start(offsets) == {f"{topic}:0": [0, None], f"{topic}:1": [0, None]}, offsets
        # Explicit acknowledgement: a release comes back, a reject never does.
        produce(go, kgroup, topic, 4, 1, prefix="e")
        explicit = go_process(go, "e", "franz-share", brokers=kgroup.bootstrap, group=group, topic=topic,
                              mode="explicit", release="e1", reject="e2")
        eventually(lambda: len(explicit.records()) >= 5, what=f"4 records, one twice: {explicit.tail()}")
    finally:
        stop(*consumers, *(p for p in (explicit,) if p))
    got = [(r[4], r[5], r[6]) for r in explicit.records()]
    assert ("e1", 1, "RELEASE") in got and ("e1", 2, "ACCEPT") in got
    assert [g for g in got if g[0] == "e2"] == [("e2", 1, "REJECT")]
    assert all(r[2] is None for e in explicit.of("acks") for r in e["results"])


def test_franz_transactions_and_idempotence(go, kgroup, name):
    source, sink, group = f"fti-{name}", f"fto-{name}", f"ftg-{name}"
    kgroup.create_topic(source, 2)
    kgroup.create_topic(sink, 2)
    produce(go, kgroup, source, 20, 2)                          # idempotent (franz-go's default)
    producers = kadm(go, kgroup, ["describeProducers", source, 0])["describeProducers"][0]
    assert producers == [[0, 9, -1]]                            # epoch 0, last sequence 9, no transaction
    produce(go, kgroup, sink, 4, 2, txn=f"abort-{name}", abort=True, prefix="aborted-")
    eos = go_run(go, "franz-eos", brokers=kgroup.bootstrap, group=group, topic=source, output=sink,
                 txn=f"eos-{name}", max=20, timeout=60)
    assert sum(e["count"] for e in eos if e["event"] == "transformed" and e["committed"]) == 20
    reader = go_run(go, "franz-consume", brokers=kgroup.bootstrap, group=f"r-{name}", topic=sink,
                    isolation="committed", max=20, timeout=60)
    read = sorted(r[4] for e in reader if e["event"] == "records" for r in e["records"])
    assert read == sorted(f"V{i}" for i in range(20))          # exactly once; the aborted ones never
    txns = kadm(go, kgroup, ["describeTransactions", f"eos-{name}"], ["listTransactions"])
    assert txns["describeTransactions"][0]["state"] == "CompleteCommit"
    assert [f"eos-{name}", "CompleteCommit"] in txns["listTransactions"][0]
    assert kadm(go, kgroup, ["fetchOffsets", group])["fetchOffsets"][0] == {f"{source}:0": 10, f"{source}:1": 10}


def test_kadm_admin_calls(go, kgroup, name):
    topic, group = f"ka-{name}", f"ka-{name}"
    got = kadm(go, kgroup, ["createTopic", topic, 2], ["brokers"], ["metadata"], ["listTopics"])
    assert got["createTopic"] == [None]
    assert got["brokers"][0] == [[1, "127.0.0.1", int(kgroup.bootstrap.rsplit(":", 1)[1])]]
    assert got["metadata"][0]["brokers"] == 1 and topic in got["listTopics"][0]
    rows = produce(go, kgroup, topic, 10, 2)
    assert sorted((r[1], r[2]) for r in rows) == sorted((p, o) for p in (0, 1) for o in range(5))
    got = kadm(go, kgroup,
               ["listStartOffsets", topic], ["listEndOffsets", topic],
               ["commitOffsets", group, topic, 0, 3], ["fetchOffsets", group], ["listGroups"],
               ["describeGroups", group], ["deleteOffsets", group, topic, 0], ["fetchOffsets", group],
               ["alterTopicConfig", topic, "retention.ms", "3600000"], ["describeTopicConfigs", topic],
               ["deleteRecords", topic, 1, 2], ["listStartOffsets", topic], ["deleteGroup", group],
               ["describeGroups", group], ["upsertSCRAM", f"u-{name}", "SCRAM-SHA-256", 4096, "pw"],
               ["describeUserSCRAMs"], ["describeACLs", topic])
    assert {k: v[0] for k, v in got["listEndOffsets"][0].items()} == {f"{topic}:0": 5, f"{topic}:1": 5}
    assert {k: v[0] for k, v in got["listStartOffsets"][0].items()} == {f"{topic}:0": 0, f"{topic}:1": 0}
    assert got["commitOffsets"] == [None] and got["fetchOffsets"][0] == {f"{topic}:0": 3}
    assert [group, "classic", "", "Empty"] in got["listGroups"][0]      # offsets only: no protocol type
    assert got["describeGroups"][0]["state"] == "Empty"
    assert got["deleteOffsets"] == [None] and got["fetchOffsets"][1] == {}
    assert got["alterTopicConfig"] == [[None]]
    assert got["describeTopicConfigs"][0]["retention.ms"] == ["3600000", "DYNAMIC_TOPIC_CONFIG"]
    assert got["deleteRecords"][0] == {f"{topic}:1": 2}
    assert {k: v[0] for k, v in got["listStartOffsets"][1].items()} == {f"{topic}:0": 0, f"{topic}:1": 2}
    assert got["deleteGroup"] == [None] and got["describeGroups"][1]["state"] == "Dead"
    assert got["upsertSCRAM"] == [None]
    assert got["describeUserSCRAMs"][0][f"u-{name}"] == ["SCRAM-SHA-256=iterations=4096"]
    [[refused]] = got["describeACLs"]                                  # no authorizer: refused
    assert "SECURITY_DISABLED" in refused


# ---- sarama -----------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_sarama_consumer_group(go, kgroup, name, strategy):
    topic, group = f"sc-{name}", f"sc-{name}"
    kgroup.create_topic(topic, 4)
    produce(go, kgroup, topic, 20, 4)
    members = [go_process(go, m, "sarama-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                          balancer=strategy) for m in ("a", "b")]
    try:
        eventually(lambda: sorted(len(m.owned()) for m in members) == [2, 2] and len(set(values(*members))) == 20,
                   timeout=60, what=f"2 and 2, 20 records: {members[0].tail()} {members[1].tail()}")
        view = kgroup.group(group)
        assert (view["kind"], view["state"], view["protocol"]) == ("classic", "Stable", strategy)
    finally:
        stop(*members)
    assert sorted(set(values(*members))) == sorted(f"v{i}" for i in range(20))
    no_partition_owned_twice(sorted((e for m in members for e in m.events), key=lambda e: e["ts"]))


def test_sarama_cooperative_sticky_revokes_only_what_moves(go, kgroup, name):
    topic, group = f"sk-{name}", f"sk-{name}"
    kgroup.create_topic(topic, 4)
    a = go_process(go, "a", "sarama-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                   balancer="cooperative-sticky")
    b = None
    try:
        eventually(lambda: len(a.owned()) == 4, timeout=60, what=f"a owns all four: {a.tail()}")
        b = go_process(go, "b", "sarama-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                       balancer="cooperative-sticky")
        eventually(lambda: len(a.owned()) == 2 and len(b.owned()) == 2, timeout=60, what=f"2 and 2: {b.tail()}")
        revoked = [tuple(p) for e in a.of("revoked") for p in e["partitions"]]
        assert sorted(revoked) == sorted(b.owned())                # a kept the other two throughout
    finally:
        stop(*(p for p in (a, b) if p))
    no_partition_owned_twice(sorted(a.events + b.events, key=lambda e: e["ts"]))


def test_sarama_static_member(go, kgroup, name):
    topic, group = f"ss-{name}", f"ss-{name}"
    kgroup.create_topic(topic, 2)
    a = go_process(go, "a", "sarama-consume", brokers=kgroup.bootstrap, group=group, topic=topic,
                   balancer="range", instance="sarama-a")
    try:
        eventually(lambda: len(a.owned()) == 2 or (a.of("assigned") and len(a.of("assigned")[-1]["partitions"]) == 2),
                   timeout=60)
        view = kgroup.group(group)
        assert [m["instance_id"] for m in view["members"]] == ["sarama-a"]
    finally:
        stop(a)
    # sarama leaves on close even as a static member (LeaveGroup with its instance id).
    eventually(lambda: kgroup.group(group)["members"] == [], timeout=30)


def test_sarama_producers(go, kgroup, name):
    topic = f"sp-{name}"
    kgroup.create_topic(topic, 2)
    for flags in ({"idempotent": False}, {"idempotent": True}, {"txn": f"st-{name}"},
                  {"txn": f"sa-{name}", "abort": True, "prefix": "aborted-"}):
        events = go_run(go, "sarama-produce", brokers=kgroup.bootstrap, topic=topic, count=4, partitions=2, **flags)
        [done] = [e for e in events if e["event"] == "produced"]
        assert all(r[3] is None for r in done["records"]), done
    reader = go_run(go, "franz-consume", brokers=kgroup.bootstrap, group=f"sr-{name}", topic=topic,
                    isolation="committed", max=12, timeout=60)
    read = sorted(r[4] for e in reader if e["event"] == "records" for r in e["records"])
    assert read == sorted([f"v{i}" for i in range(4)] * 3)      # plain, idempotent, committed; not aborted


def test_sarama_offsets(go, kgroup, name):
    topic, group = f"so-{name}", f"so-{name}"
    kgroup.create_topic(topic, 3)
    got = results(go_run(go, "sarama-offsets", brokers=kgroup.bootstrap, group=group, topic=topic, partitions=3))
    assert got["committed"] == [{f"{topic}:{p}": [p + 1, "meta", None] for p in range(3)}]
    assert group in got["listGroups"][0]
    assert got["describe"] == [{"state": "Empty", "protocolType": ""}]   # offsets only, as Kafka describes it
    assert got["deleteOffset"] == [None]
    assert got["afterDelete"] == [{f"{topic}:{p}": [p + 1, "meta", None] for p in (1, 2)}]
    assert got["deleteGroup"] == [None]
