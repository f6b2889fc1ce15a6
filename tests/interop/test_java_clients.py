"""Kafka 4.4's Java clients against kgroup: KafkaConsumer (classic: range, cooperative-sticky,
static membership; the consumer protocol: the uniform and range server assignors, a regex
subscription, a static member, rack ids), KafkaShareConsumer (implicit and explicit
acknowledgement: accept, release, reject, renew), KafkaProducer (idempotent; transactional,
consume-transform-produce with sendOffsetsToTransaction).

All of them run in one JVM for the module (tests/java's worker); each consumer polls on its
own thread and reports what it sees as events.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kgroup.testing.ports import free_port

from tests.integration.cdp import Browser
from tests.interop.helpers import (abort_transaction, eventually, no_partition_owned_twice, past_start, spread,
                                   values)
from tests.interop.java import JavaError

pytestmark = pytest.mark.integration
# The broker's console and /metrics: the telemetry test reads the pushed client metrics there.
KGROUP_SETTINGS = {"http_listen": f"127.0.0.1:{free_port()}"}


@pytest.fixture(scope="module")
def admin(java, kgroup):
    java.call("admin.new", name="admin", config={"bootstrap.servers": kgroup.bootstrap})
    java.call("producer.new", name="producer", config={"bootstrap.servers": kgroup.bootstrap})
    return "admin"


def topic_with_records(java, topic: str, partitions: int, count: int, prefix: str = "v") -> list[str]:
    assert java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": partitions}]) == {topic: None}
    java.call("producer.send", name="producer", records=spread(topic, count, partitions, prefix))
    return values(count, prefix)


def consumer_config(kgroup, group: str, protocol: str, **more) -> dict:
    return {"bootstrap.servers": kgroup.bootstrap, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "enable.auto.commit": "false", **more}


def consumed(java, *names: str) -> list[str]:
    return sorted(r[4] for n in names for r in java.records(n))


def close(java, *names: str, leave: bool = True) -> None:
    for n in names:
        java.call("consumer.close", name=n, leave=leave)


def committed(java, group: str) -> dict[str, int]:
    return {tp: v[0] for tp, v in java.call("admin.listConsumerGroupOffsets", name="admin", group=group).items()}


# ---- KafkaConsumer, classic protocol -----------------------------------------------------------

def test_java_classic_range_consumers_split_a_topic_and_commit(java, kgroup, admin, name):
    topic, group = f"jr-{name}", f"jr-{name}"
    sent = topic_with_records(java, topic, 4, 40)
    config = consumer_config(kgroup, group, "classic",
                             **{"partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor"})
    java.consumer("r1", {**config, "client.id": "r1"}, topics=[topic], commit="sync")
    java.consumer("r2", {**config, "client.id": "r2"}, topics=[topic], commit="sync")
    try:
        eventually(lambda: len(consumed(java, "r1", "r2")) >= 40 and java.owned("r1") and java.owned("r2"),
                   what="both consumers own partitions and all 40 records are read")
        owners = no_partition_owned_twice(java.events)
        assert sorted(len(owners[n]) for n in ("r1", "r2")) == [2, 2]
        # Range: each member gets a contiguous run of the topic's partitions.
        assert sorted(sorted(p for _, p in owners[n]) for n in ("r1", "r2")) == [[0, 1], [2, 3]]
        eventually(lambda: committed(java, group) == {f"{topic}:{p}": 10 for p in range(4)})
        described = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]
        assert (described["type"], described["state"], described["assignor"]) == ("Classic", "Stable", "range")
        assert sorted(m["clientId"] for m in described["members"]) == ["r1", "r2"]
    finally:
        close(java, "r1", "r2")
    assert consumed(java, "r1", "r2") == sorted(sent)       # each record once: nothing read twice


def test_java_cooperative_sticky_revokes_only_what_moves(java, kgroup, admin, name):
    topic, group = f"jc-{name}", f"jc-{name}"
    topic_with_records(java, topic, 4, 8)
    config = consumer_config(kgroup, group, "classic", **{
        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"})
    java.consumer("s1", config, topics=[topic])
    try:
        eventually(lambda: len(java.owned("s1")) == 4, what="s1 owns all 4 partitions")
        java.consumer("s2", config, topics=[topic])
        eventually(lambda: len(java.owned("s2")) == 2 and len(java.owned("s1")) == 2, what="2 and 2")
        revoked = [tuple(p) for e in java.of("s1", "revoked") for p in e["partitions"]]
        assert len(revoked) == 2 and set(revoked) == java.owned("s2")     # only what moved
        no_partition_owned_twice(java.events)
        described = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]
        assert described["assignor"] == "cooperative-sticky"
    finally:
        close(java, "s1", "s2")


def test_java_classic_static_member_comes_back_without_a_rebalance(java, kgroup, admin, name):
    topic, group = f"js-{name}", f"js-{name}"
    topic_with_records(java, topic, 4, 4)
    config = consumer_config(kgroup, group, "classic", **{"session.timeout.ms": "30000"})
    java.consumer("a", {**config, "group.instance.id": "instance-a"}, topics=[topic])
    java.consumer("b", {**config, "group.instance.id": "instance-b"}, topics=[topic])
    try:
        eventually(lambda: len(java.owned("a")) == 2 and len(java.owned("b")) == 2)
        before = java.call("consumer.call", name="a", method="groupMetadata")
        mine = java.owned("a")
        close(java, "a", leave=False)                  # gone without a LeaveGroup, as a restart
        b_events = len(java.of("b"))
        java.consumer("a2", {**config, "group.instance.id": "instance-a"}, topics=[topic])
        eventually(lambda: java.owned("a2") == mine, what="instance-a gets its partitions back")
        after = java.call("consumer.call", name="a2", method="groupMetadata")
        assert after["generationId"] == before["generationId"]          # no rebalance
        assert after["groupInstanceId"] == "instance-a"
        assert [e for e in java.of("b")[b_events:] if e["event"] in ("assigned", "revoked")] == []
        members = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]["members"]
        assert sorted(m["instanceId"] for m in members) == ["instance-a", "instance-b"]
    finally:
        close(java, "a2", "b")


# ---- KafkaConsumer, consumer protocol (KIP-848) ------------------------------------------------

@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_java_consumer_protocol_server_assignors_and_rack_ids(java, kgroup, admin, name, assignor):
    topic, group = f"jn-{name}", f"jn-{name}"
    sent = topic_with_records(java, topic, 4, 40)
    config = consumer_config(kgroup, group, "consumer", **{"group.remote.assignor": assignor})
    java.consumer("n1", {**config, "client.rack": "rack-a"}, topics=[topic], commit="sync")
    java.consumer("n2", {**config, "client.rack": "rack-b"}, topics=[topic], commit="sync")
    try:
        eventually(lambda: len(consumed(java, "n1", "n2")) >= 40 and len(java.owned("n1")) == 2
                   and len(java.owned("n2")) == 2, what="2 + 2 partitions, 40 records")
        owners = no_partition_owned_twice(java.events)
        if assignor == "range":
            assert sorted(sorted(p for _, p in owners[n]) for n in ("n1", "n2")) == [[0, 1], [2, 3]]
        d = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]
        assert (d["type"], d["state"], d["assignor"]) == ("Consumer", "Stable", assignor)
        assert d["groupEpoch"] == d["targetAssignmentEpoch"]
        assert sorted(m["rackId"] for m in d["members"]) == ["rack-a", "rack-b"]
        for m in d["members"]:
            assert m["memberEpoch"] == d["groupEpoch"] and m["assignment"] == m["targetAssignment"]
            assert len(m["assignment"]) == 2
        eventually(lambda: committed(java, group) == {f"{topic}:{p}": 10 for p in range(4)})
    finally:
        close(java, "n1", "n2")
    assert consumed(java, "n1", "n2") == sorted(sent)


def test_java_consumer_protocol_regex_subscription_picks_up_new_topics(java, kgroup, admin, name):
    group = f"jx-{name}"
    topic_with_records(java, f"rx-{name}-a", 2, 2)
    topic_with_records(java, f"rx-{name}-other", 1, 1)     # does not match
    java.consumer("x", consumer_config(kgroup, group, "consumer"), regex=f"rx-{name}-[ab]")
    try:
        eventually(lambda: java.owned("x") == {(f"rx-{name}-a", 0), (f"rx-{name}-a", 1)})
        topic_with_records(java, f"rx-{name}-b", 1, 1)
        eventually(lambda: (f"rx-{name}-b", 0) in java.owned("x"), timeout=60, what="the new topic is assigned")
        d = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]
        assert d["members"][0]["assignment"] == [[f"rx-{name}-a", 0], [f"rx-{name}-a", 1], [f"rx-{name}-b", 0]]
    finally:
        close(java, "x")


def test_java_consumer_protocol_static_member_rejoins_with_its_partitions(java, kgroup, admin, name):
    topic, group = f"jt-{name}", f"jt-{name}"
    topic_with_records(java, topic, 4, 4)
    config = consumer_config(kgroup, group, "consumer")
    java.consumer("p", {**config, "group.instance.id": "static-p"}, topics=[topic])
    java.consumer("q", {**config, "group.instance.id": "static-q"}, topics=[topic])
    try:
        eventually(lambda: len(java.owned("p")) == 2 and len(java.owned("q")) == 2)
        mine = java.owned("p")
        epoch = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]["groupEpoch"]
        close(java, "p", leave=False)                  # leaves with epoch -2: its partitions wait for it
        q_events = len(java.of("q"))
        d = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]
        assert d["groupEpoch"] == epoch and len(d["members"]) == 2
        java.consumer("p2", {**config, "group.instance.id": "static-p"}, topics=[topic])
        eventually(lambda: java.owned("p2") == mine, what="static-p gets its partitions back")
        d = java.call("admin.describeConsumerGroups", name="admin", groups=[group])[group]
        assert d["groupEpoch"] == epoch                                   # no new assignment was needed
        assert sorted(m["instanceId"] for m in d["members"]) == ["static-p", "static-q"]
        assert [e for e in java.of("q")[q_events:] if e["event"] in ("assigned", "revoked")] == []
    finally:
        close(java, "p2", "q")


# ---- KafkaShareConsumer (KIP-932) --------------------------------------------------------------

def share_group(java, group: str) -> None:
    """A share group reading from the start (share.auto.offset.reset is a group config)."""
    assert java.call("admin.incrementalAlterConfigs", name="admin",
                     resources=[["GROUP", group, [["SET", "share.auto.offset.reset", "earliest"]]]]) == {
        f"GROUP:{group}": "ok"}


def test_java_share_consumers_implicit_mode_each_record_once(java, kgroup, admin, name):
    topic, group = f"ji-{name}", f"ji-{name}"
    sent = topic_with_records(java, topic, 2, 30)
    share_group(java, group)
    config = {"bootstrap.servers": kgroup.bootstrap, "group.id": group}
    java.share_consumer("i1", config, [topic])
    java.share_consumer("i2", config, [topic])
    try:
        eventually(lambda: len(consumed(java, "i1", "i2")) >= 30, what="30 records")
        eventually(lambda: past_start(java.call("admin.listShareGroupOffsets", name="admin", group=group))
                   == {f"{topic}:0": [0, 0], f"{topic}:1": [0, 0]}, what="everything acknowledged")
        d = java.call("admin.describeShareGroups", name="admin", groups=[group])[group]
        assert d["state"] == "Stable" and len(d["members"]) == 2
        # Both partitions are assigned (a member takes its new target at its next heartbeat,
        # so for a moment a partition may show on both: share partitions may be shared).
        assert {p for m in d["members"] for p in map(tuple, m["assignment"])} == {(topic, 0), (topic, 1)}
    finally:
        for n in ("i1", "i2"):
            java.call("share.close", name=n)
    assert consumed(java, "i1", "i2") == sorted(sent)
    assert all(r[5] == 1 for n in ("i1", "i2") for r in java.records(n))   # first delivery each
    assert all(e["error"] is None for n in ("i1", "i2") for e in java.of(n, "acks"))


def test_java_share_consumer_explicit_accept_release_reject(java, kgroup, admin, name):
    topic, group = f"je-{name}", f"je-{name}"
    sent = topic_with_records(java, topic, 1, 10)
    share_group(java, group)
    java.share_consumer("e", {"bootstrap.servers": kgroup.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"}, [topic], commit="sync",
                        plan={"release": ["v3"], "reject": ["v4"]})
    try:
        eventually(lambda: past_start(java.call("admin.listShareGroupOffsets", name="admin", group=group))
                   == {f"{topic}:0": [0, 0]}, what="every record accepted or archived")
    finally:
        java.call("share.close", name="e")
    got = [(r[4], r[5], r[6]) for r in java.records("e")]
    assert ("v3", 1, "RELEASE") in got and ("v3", 2, "ACCEPT") in got        # released: delivered again
    assert [g for g in got if g[0] == "v4"] == [("v4", 1, "REJECT")]          # rejected: never again
    assert sorted(v for v, _, ack in got if ack == "ACCEPT") == sorted(set(sent) - {"v4"})
    assert all(e["error"] is None for e in java.of("e", "acks"))
    assert all(r is None for e in java.of("e", "committed") for r in e["results"].values())


def test_java_share_consumer_renews_its_lock(java, kgroup, admin, name):
    topic, group = f"jw-{name}", f"jw-{name}"
    topic_with_records(java, topic, 1, 3)
    share_group(java, group)
    java.call("admin.incrementalAlterConfigs", name="admin",
              resources=[["GROUP", group, [["SET", "share.renew.acknowledge.enable", "true"]]]])
    java.share_consumer("w", {"bootstrap.servers": kgroup.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"}, [topic], commit="sync",
                        plan={"renew": ["v1"]})
    try:
        eventually(lambda: past_start(java.call("admin.listShareGroupOffsets", name="admin", group=group))
                   == {f"{topic}:0": [0, 0]}, timeout=20)
    finally:
        java.call("share.close", name="w")
    got = [(r[4], r[5], r[6]) for r in java.records("w")]
    assert ("v1", 1, "RENEW") in got and ("v1", 1, "ACCEPT") in got          # same delivery, lock renewed
    assert all(e["error"] is None for e in java.of("w", "acks"))


# ---- KafkaProducer -----------------------------------------------------------------------------

def test_java_idempotent_producer(java, kgroup, admin, name):
    topic = f"jp-{name}"
    java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": 2}])
    java.call("producer.new", name="idem", config={"bootstrap.servers": kgroup.bootstrap,
                                                   "enable.idempotence": "true", "acks": "all"})
    try:
        sent = java.call("producer.send", name="idem", records=spread(topic, 50, 2))
        assert sorted((p, o) for _, p, o, _ in sent) == sorted((p, o) for p in (0, 1) for o in range(25))
        producers = java.call("admin.describeProducers", name="admin", partitions=[[topic, 0], [topic, 1]])
        for tp in (f"{topic}:0", f"{topic}:1"):
            [(pid, epoch, last_sequence, txn_start)] = producers[tp]
            assert pid >= 0 and last_sequence == 24 and txn_start is None
        ends = java.call("admin.listOffsets", name="admin", partitions=[[topic, 0], [topic, 1]], spec="latest")
        assert [ends[f"{topic}:{p}"][0] for p in (0, 1)] == [25, 25]
    finally:
        java.call("producer.close", name="idem")


def test_java_transactional_consume_transform_produce(java, kgroup, admin, name):
    source, sink, group = f"jti-{name}", f"jto-{name}", f"jtg-{name}"
    sent = topic_with_records(java, source, 3, 30)
    java.call("admin.createTopics", name="admin", topics=[{"name": sink, "partitions": 2}])
    txn = f"txn-{name}"
    java.consumer("eos", consumer_config(kgroup, group, "classic", **{"isolation.level": "read_committed"}),
                  topics=[source], transform={"output": sink, "config": {
                      "bootstrap.servers": kgroup.bootstrap, "transactional.id": txn}})
    try:
        eventually(lambda: sum(e["count"] for e in java.of("eos", "transformed")) >= 30, what="30 transformed")
        assert java.of("eos", "aborted") == []
        eventually(lambda: committed(java, group) == {f"{source}:{p}": 10 for p in range(3)})
        described = java.call("admin.describeTransactions", name="admin", ids=[txn])[txn]
        assert described["state"] == "CompleteCommit" and described["partitions"] == []
        assert any(t[0] == txn for t in java.call("admin.listTransactions", name="admin"))
    finally:
        close(java, "eos")
    # An aborted transaction on the same output is never seen by read_committed readers.
    abort_transaction(java, kgroup.bootstrap, f"abort-{name}", spread(sink, 4, 2, prefix="aborted-"))
    java.consumer("reader", consumer_config(kgroup, f"reader-{name}", "classic", **{"isolation.level": "read_committed"}),
                  topics=[sink])
    try:
        eventually(lambda: len(consumed(java, "reader")) >= 30, what="30 committed results")
        ends = java.call("admin.listOffsets", name="admin", partitions=[[sink, 0], [sink, 1]], spec="latest",
                         readCommitted=True)
        eventually(lambda: java.call("consumer.call", name="reader", method="position")
                   and sorted(o for _, _, o in java.call("consumer.call", name="reader", method="position"))
                   == sorted(v[0] for v in ends.values()), what="the reader is at the end")
    finally:
        close(java, "reader")
    assert consumed(java, "reader") == sorted(v.upper() for v in sent)     # exactly once, none aborted


def test_java_transactional_producer_uses_transactions_v2(java, kgroup, admin, name):
    """KIP-890 part 2: kgroup finalizes transaction.version 2, so the Java 4.4 producer sends
    no AddPartitionsToTxn (Produce v12 adds the partition) and every EndTxn v5 bumps its
    epoch: after three transactions (two commits, one abort) the epoch is 3 (under v1 it
    stays 0), and read_committed readers see the committed records only."""
    topic = f"jtv2-{name}"
    java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": 2}])
    txn = f"tv2-{name}"
    java.call("producer.new", name="tv2", config={"bootstrap.servers": kgroup.bootstrap, "transactional.id": txn})
    try:
        java.call("producer.initTransactions", name="tv2")
        start = java.call("admin.describeTransactions", name="admin", ids=[txn])[txn]["producerEpoch"]
        for i, commit in enumerate((True, False, True)):
            java.call("producer.beginTransaction", name="tv2")
            java.call("producer.send", name="tv2", records=spread(topic, 4, 2, prefix=f"t{i}-"))
            java.call("producer.commitTransaction" if commit else "producer.abortTransaction", name="tv2")
        described = java.call("admin.describeTransactions", name="admin", ids=[txn])[txn]
        assert described["state"] == "CompleteCommit" and described["producerEpoch"] == start + 3
    finally:
        java.call("producer.close", name="tv2")
    java.consumer("tv2-reader", consumer_config(kgroup, f"tv2-reader-{name}", "classic",
                                                **{"isolation.level": "read_committed"}), topics=[topic])
    try:
        eventually(lambda: len(consumed(java, "tv2-reader")) >= 8, what="8 committed records")
    finally:
        close(java, "tv2-reader")
    assert consumed(java, "tv2-reader") == sorted(values(4, "t0-") + values(4, "t2-"))


def test_java_producer_fenced_by_a_newer_instance(java, kgroup, admin, name):
    topic = f"jf-{name}"
    java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": 1}])
    config = {"bootstrap.servers": kgroup.bootstrap, "transactional.id": f"fence-{name}"}
    java.call("producer.new", name="old", config=config)
    java.call("producer.new", name="new", config=config)
    try:
        java.call("producer.initTransactions", name="old")
        java.call("producer.beginTransaction", name="old")
        java.call("producer.send", name="old", records=spread(topic, 1, 1))
        java.call("producer.initTransactions", name="new")               # fences "old", aborts its transaction
        with pytest.raises(JavaError) as fenced:
            java.call("producer.commitTransaction", name="old")
        assert fenced.value.kind in ("ProducerFencedException", "InvalidProducerEpochException")
    finally:
        java.call("producer.close", name="old", timeoutS=5)
        java.call("producer.close", name="new")


# ---- client telemetry (KIP-714) ---------------------------------------------------------------

def test_java_consumer_pushes_its_metrics_into_metrics_and_groups_describe(java, kgroup, admin, name, tmp_path):
    """A subscription made with Kafka's own kafka-client-metrics selects the consumer (by client
    id and by the software its ApiVersions named, KIP-511); the Java consumer (enable.metrics.push) fetches it and pushes its metrics, which show in
    /metrics under its group, in the web console's member panel (headless Chromium) and in
    `kgroup groups describe --members --verbose --telemetry`."""
    topic, group, client = f"jt-{name}", f"jt-{name}", f"jt-{name}-client"
    http = KGROUP_SETTINGS["http_listen"]
    topic_with_records(java, topic, 1, 5)
    made = java.tool("org.apache.kafka.tools.ClientMetricsCommand", "--bootstrap-server", kgroup.bootstrap,
                     "--alter", "--name", f"jt-{name}", "--metrics", "org.apache.kafka.consumer.",
                     "--interval", "500", "--match", f"client_id={client},client_software_name=apache-kafka-java")
    assert made["exit"] == 0, made
    java.consumer("t1", {**consumer_config(kgroup, group, "consumer"), "client.id": client,
                         "enable.metrics.push": "true"}, topics=[topic], commit="sync")
    try:
        def series() -> list[str]:
            text = urllib.request.urlopen(f"http://{http}/metrics", timeout=5).read().decode()
            return [line for line in text.splitlines()
                    if line.startswith("kgroup_client_metric{") and f'client_id="{client}"' in line
                    and f'group="{group}"' in line]
        lines = eventually(lambda: len(series()) >= 2 and series(), timeout=60,
                           what="the consumer's pushed metrics in /metrics under its group")
        assert any('metric="poll-idle-ratio-avg"' in line for line in lines), lines
        pushed = json.load(urllib.request.urlopen(f"http://{http}/api/telemetry", timeout=5))
        mine = [c for c in pushed["clients"] if c["client_id"] == client]
        assert mine and mine[0]["group"] == group and mine[0]["subscribed"] == ["org.apache.kafka.consumer."]
        assert all(n.startswith("org.apache.kafka.consumer.") for n in mine[0]["metrics"])
        # The console's member panel reads the group's detail: the member carries its metrics.
        detail = json.load(urllib.request.urlopen(f"http://{http}/api/groups/{group}", timeout=5))
        assert [m["telemetry"]["client_instance_id"] for m in detail["members"]] == [mine[0]["client_instance_id"]]
        assert "poll-idle-ratio-avg" in detail["members"][0]["telemetry"]["key_metrics"]
        # ... and the console shows them in the member's CLIENT METRICS cell.
        browser = Browser(tmp_path / "chromium")
        try:
            browser.open(f"http://{http}/#group={group}", width=1280, height=800)
            cell = browser.wait("(() => { const c = document.querySelector('#members tbody tr td:nth-child(9)');"
                                " return c && c.innerText.includes('poll idle') && [c.innerText, c.title]; })()",
                                "the member's pushed metrics in the console", timeout=30)
            assert cell[1] == mine[0]["client_instance_id"], cell
            assert browser.js("[...document.querySelectorAll('#members th')].map(th => th.innerText.trim())"
                              ".indexOf('CLIENT METRICS')") == 8
        finally:
            browser.close()
        out = subprocess.run([str(Path(sys.executable).with_name("kgroup")), "groups", "describe", group,
                              "--bootstrap-server", kgroup.bootstrap, "--members", "--verbose",
                              "--telemetry", http], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        head, row = out.stdout.splitlines()[:2]
        assert head.split()[-3:] == ["POLL-IDLE-RATIO", "COMMIT-LATENCY-AVG", "REBALANCES"]
        assert client in row and row.split()[-3] != "-", out.stdout
    finally:
        close(java, "t1")
        java.tool("org.apache.kafka.tools.ClientMetricsCommand", "--bootstrap-server", kgroup.bootstrap,
                  "--delete", "--name", f"jt-{name}")
