"""Watching the coordinator with a real `kgroup serve` and real kafka-python consumers: the
group log says each change once, in order, and nothing while the group is steady; /metrics
parses with prometheus_client's parser and its counters move as the group rebalances."""

from __future__ import annotations

import asyncio
import re
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kgroup.client.admin import AdminClient
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.clients import ConsumerThread, create_topic, wait_for
from tests.integration.waits import hold

pytestmark = pytest.mark.integration

LINE = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+)\s+(?P<logger>\S+): (?P<message>.*)$")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One broker with the console on, shared by this module's tests (each uses its own group)."""
    proc = BrokerProcess(tmp_path_factory.mktemp("obs") / "data",
                         extra={"http_listen": f"127.0.0.1:{free_port()}"}).start()
    proc.http = re.search(r"web console and metrics on (http://\S+/)", proc.log()).group(1)
    yield proc
    proc.finish()


def log_lines(broker: BrokerProcess) -> list[tuple[str, str, str]]:
    """(level, logger, message) of every log line so far."""
    return [(m["level"], m["logger"], m["message"]) for m in map(LINE.match, broker.log().splitlines()) if m]


def group_info(broker: BrokerProcess, group: str, start: int = 0) -> list[str]:
    prefix = f"group {group}: "
    return [msg[len(prefix):] for level, logger, msg in log_lines(broker)[start:]
            if level == "INFO" and logger == "kgroup.broker.groups" and msg.startswith(prefix)]


def in_order(lines: list[str], patterns: list[str]) -> list[re.Match]:
    """Match `patterns` against `lines` as an ordered subsequence; fail saying which is missing."""
    found, i = [], 0
    for pattern in patterns:
        while i < len(lines) and not re.fullmatch(pattern, lines[i]):
            i += 1
        assert i < len(lines), f"no line {pattern!r} after the ones matched so far:\n" + "\n".join(lines)
        found.append(re.fullmatch(pattern, lines[i]))
        i += 1
    return found


def test_a_group_lifecycle_logs_each_change_in_order_and_a_steady_group_nothing(broker):
    create_topic(broker.bootstrap, "life", 4)
    group = "life-g"
    alpha = ConsumerThread("kafka-python", broker.bootstrap, group, "life", "alpha")
    alpha.start()
    wait_for(lambda: alpha.tally.assigned == {0, 1, 2, 3}, 40, what="alpha owns every partition")

    # Steady: heartbeats every second for a few seconds, and not one INFO line from anyone.
    mark = len(log_lines(broker))
    hold(4, "heartbeats every second for a few seconds")
    steady = [line for line in log_lines(broker)[mark:] if line[0] != "DEBUG"]
    assert steady == []

    beta = ConsumerThread("kafka-python", broker.bootstrap, group, "life", "beta", group_instance_id="beta-1")
    beta.start()
    wait_for(lambda: len(alpha.tally.assigned) == 2 and len(beta.tally.assigned) == 2, 40, what="two members")
    beta.stop(commit=False)                              # static: no LeaveGroup, its session (6 s) ends
    wait_for(lambda: alpha.tally.assigned == {0, 1, 2, 3}, 40, what="alpha alone again")
    alpha.stop(commit=False)                             # dynamic: LeaveGroup
    wait_for(lambda: "now Empty (no members)" in group_info(broker, group), 20, what="the group empty")

    async def delete():
        async with AdminClient(broker.bootstrap) as admin:
            await admin.delete_groups([group])
    asyncio.run(delete())
    wait_for(lambda: "deleted" in group_info(broker, group), 20, what="the group deleted")

    lines = group_info(broker, group)
    host = r"/127\.0\.0\.1"
    found = in_order(lines, [
        rf"member (?P<alpha>alpha-\S+) joined \(client id alpha, host {host}\)",
        r"rebalance started \(cause: member joined; from generation 0\)",
        r"rebalance completed \(generation 1, \d+ ms, 1 member, 0 partitions moved\)",
        rf"member (?P<beta>beta-1-\S+) joined \(client id beta, host {host}, instance beta-1\)",
        r"rebalance started \(cause: member joined; from generation \d+\)",
        r"rebalance completed \(generation \d+, \d+ ms, 2 members, 2 partitions moved\)",
        rf"member (?P<beta>beta-1-\S+) expired \(session timeout; client id beta, host {host}, instance beta-1\)",
        r"rebalance started \(cause: member expired; from generation \d+\)",
        r"rebalance completed \(generation \d+, \d+ ms, 1 member, 2 partitions moved\)",
        rf"member (?P<alpha>alpha-\S+) left \(LeaveGroup; client id alpha, host {host}\)",
        r"now Empty \(no members\)",
        r"deleted",
    ])
    assert found[0]["alpha"] == found[9]["alpha"] and found[3]["beta"] == found[6]["beta"]
    # Nothing else was said at INFO about this group but the kinds of line above (a client may
    # rejoin on its own, which is one more rebalance, logged as such).
    kinds = re.compile(r"member \S+ (joined|left|expired|fenced) .*|rebalance (started|completed) .*"
                       r"|now Empty \(no members\)|deleted")
    assert all(kinds.fullmatch(line) for line in lines), lines
    assert alpha.tally.error is None and beta.tally.error is None


def scrape(broker: BrokerProcess) -> dict[tuple[str, tuple], float]:
    body = urllib.request.urlopen(broker.http + "metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def test_metrics_parse_and_their_counters_move_as_the_group_rebalances(broker):
    from confluent_kafka import Producer

    create_topic(broker.bootstrap, "metered", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce("metered", str(i).encode(), partition=i % 2)
    producer.flush(10)
    group = "metered-g"
    first = ConsumerThread("kafka-python", broker.bootstrap, group, "metered", "first")
    first.start()
    wait_for(lambda: len(first.tally.consumed) == 20, 40, what="first read everything")
    first.commit_now()
    key = lambda name, **labels: (name, tuple(sorted(labels.items())))    # noqa: E731
    wait_for(lambda: scrape(broker).get(key("kgroup_group_total_lag", group=group)) == 0, 20, what="lag 0")
    before = scrape(broker)
    assert before[key("kgroup_group_members", group=group, kind="classic")] == 1
    assert before[key("kgroup_groups", kind="classic", state="Stable")] >= 1
    assert before[key("kgroup_rebalances_total", group=group)] >= 1

    for i in range(7):                                   # read but not committed: lag 7
        producer.produce("metered", b"more", partition=0)
    producer.flush(10)
    second = ConsumerThread("kafka-python", broker.bootstrap, group, "metered", "second")
    second.start()
    wait_for(lambda: len(first.tally.assigned) == 1 and len(second.tally.assigned) == 1, 40, what="two members")
    wait_for(lambda: scrape(broker).get(key("kgroup_group_members", group=group, kind="classic")) == 2, 20,
             what="the metrics to see two members")
    after = scrape(broker)
    assert after[key("kgroup_rebalances_total", group=group)] > before[key("kgroup_rebalances_total", group=group)]
    assert after[key("kgroup_partitions_moved_total", group=group)] >= \
        before[key("kgroup_partitions_moved_total", group=group)] + 1
    duration = key("kgroup_rebalance_duration_seconds_count", kind="classic")
    assert after[duration] > before[duration]
    joins = key("kgroup_requests_total", api="JoinGroup", error="NONE")
    assert after[joins] > before[joins]
    # kafka-python heartbeats every 3 s: alone, this test can reach here before the first one.
    heartbeats = key("kgroup_requests_total", api="Heartbeat", error="NONE")
    wait_for(lambda: scrape(broker).get(heartbeats, 0) > 0, 20, what="a heartbeat counted")
    assert after[key("kgroup_group_total_lag", group=group)] == 7
    assert after[key("kgroup_group_lag", group=group, topic="metered", partition="0")] == 7
    assert after[key("kgroup_fsync_duration_seconds_count")] > 0
    for t in (first, second):
        t.stop(commit=False)
        assert t.tally.error is None


def test_with_the_event_topic_off_group_changes_are_still_logged(tmp_path):
    broker = BrokerProcess(tmp_path / "data", extra={"group_events": False}).start()
    member = None
    try:
        create_topic(broker.bootstrap, "quiet", 1)
        member = ConsumerThread("kafka-python", broker.bootstrap, "quiet-g", "quiet", "solo")
        member.start()
        wait_for(lambda: member.tally.assigned == {0}, 40, what="solo assigned")
        lines = group_info(broker, "quiet-g")
        in_order(lines, [r"member solo-\S+ joined \(client id solo, host /127\.0\.0\.1\)",
                         r"rebalance completed \(generation 1, \d+ ms, 1 member, 0 partitions moved\)"])

        async def topics():
            async with AdminClient(broker.bootstrap) as admin:
                return set((await admin.metadata()).topics)
        assert "__kgroup_events" not in asyncio.run(topics())
    finally:
        if member is not None:
            member.stop(commit=False)
        broker.finish()


def test_expired_offsets_and_the_group_they_leave_behind_are_logged(tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    broker = BrokerProcess(tmp_path / "data", group={"offsets_retention_ms": 1000,
                                                     "offsets_retention_check_interval_ms": 300}).start()
    try:
        create_topic(broker.bootstrap, "kept", 2)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "brief-g"})
        consumer.commit(offsets=[TopicPartition("kept", p, 1) for p in range(2)], asynchronous=False)
        consumer.close()
        # A "simple" group (commits only, no members): its offsets are all there is of it.
        expired = "2 committed offsets expired (offsets retention)"
        wait_for(lambda: expired in group_info(broker, "brief-g"), 30, what="the offsets to expire")
        assert group_info(broker, "brief-g") == [expired]
    finally:
        broker.finish()
