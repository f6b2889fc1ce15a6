"""The `kgroup` group tools against `kgroup serve`, each checked by what a real client then reads.

`kgroup consume` runs as the real `kgroup` script in a subprocess; the other tools through the
script's own `main` in this process (tests/integration/cli_inprocess.py). After a reset, a confluent-kafka
consumer joins the group and the first offset it reads (or the offset it finds committed)
must be the one the tool promised.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.clients import create_topic

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

pytestmark = pytest.mark.integration
KGROUP = str(Path(sys.executable).with_name("kgroup"))
T0 = 1_700_000_000_000          # timestamps of produced records: T0, T0 + 1 s, ...


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("tools") / "data", group={"initial_rebalance_delay_ms": 0}).start()
    yield proc
    proc.finish()


def kgroup(broker, *args: str, stdin: str | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    argv = [*args, "--bootstrap-server", broker.bootstrap]
    done = (subprocess.run([KGROUP, *argv], input=stdin, capture_output=True, text=True, timeout=60)
            if args[0] == "consume" else kgroup_inprocess(argv, stdin))
    assert "Traceback" not in done.stderr, done.stderr
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def produce(broker, topic: str, count: int, *, partition: int = 0, ts=lambda i: T0 + i * 1000) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(count):
        p.produce(topic, f"{topic}-{i}".encode(), partition=partition, timestamp=ts(i))
        p.flush(15)                    # one batch per record: timestamps step across batches
    p.flush(15)


def first_read(broker, group: str, topic: str, partitions=(0,)) -> dict[int, int]:
    """partition -> the first offset a real consumer of ``group`` reads from its committed offset."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "latest",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p) for p in partitions])   # starts at the committed offsets
        got: dict[int, int] = {}
        deadline = time.monotonic() + 20
        while len(got) < len(partitions) and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                got.setdefault(msg.partition(), msg.offset())
        return got
    finally:
        c.close()


def committed(broker, group: str, topic: str, partitions=(0,)) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in partitions],
                                                               timeout=15)}
    finally:
        c.close()


def reset(broker, group: str, *args: str) -> subprocess.CompletedProcess:
    return kgroup(broker, "groups", "reset-offsets", "--group", group, *args, "--execute")


def test_reset_to_datetime_lands_on_the_first_offset_at_or_after_that_time(broker):
    create_topic(broker.bootstrap, "t-dt", 1)
    produce(broker, "t-dt", 10)
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 4_500) / 1000)) + ".500Z"
    reset(broker, "g-dt", "--topic", "t-dt", "--to-datetime", when)
    assert first_read(broker, "g-dt", "t-dt") == {0: 5}                 # T0 + 5 s is the first at/after
    exact = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 3_000) / 1000)) + "+00:00"
    reset(broker, "g-dt", "--topic", "t-dt", "--to-datetime", exact)
    assert first_read(broker, "g-dt", "t-dt") == {0: 3}
    # Past the last record: the log end, as Kafka's tool does.
    reset(broker, "g-dt", "--topic", "t-dt", "--to-datetime", "2100-01-01T00:00:00Z")
    assert committed(broker, "g-dt", "t-dt") == {0: 10}


def test_reset_by_duration(broker):
    create_topic(broker.bootstrap, "t-dur", 1)
    now = int(time.time() * 1000)
    produce(broker, "t-dur", 6, ts=lambda i: now - (60 - 10 * i) * 60_000)   # 60, 50, ... 10 minutes ago
    reset(broker, "g-dur", "--topic", "t-dur", "--by-duration", "PT35M")
    assert first_read(broker, "g-dur", "t-dur") == {0: 3}                   # 30 minutes ago
    reset(broker, "g-dur", "--topic", "t-dur", "--by-duration", "P1DT0H")
    assert first_read(broker, "g-dur", "t-dur") == {0: 0}


def test_shift_by_moves_back_and_is_clamped_at_the_log_start(broker):
    create_topic(broker.bootstrap, "t-shift", 1)
    produce(broker, "t-shift", 12)
    reset(broker, "g-shift", "--topic", "t-shift", "--to-offset", "8")
    reset(broker, "g-shift", "--topic", "t-shift", "--shift-by", "-5")
    assert first_read(broker, "g-shift", "t-shift") == {0: 3}
    reset(broker, "g-shift", "--topic", "t-shift", "--shift-by", "+4")
    assert committed(broker, "g-shift", "t-shift") == {0: 7}
    kgroup(broker, "groups", "reset-offsets", "--group", "g-shift", "--topic", "t-shift", "--shift-by", "+99",
           "--execute")
    assert committed(broker, "g-shift", "t-shift") == {0: 12}               # clamped at the log end
    import asyncio

    from kgroup.client.admin import AdminClient

    async def trim():
        async with AdminClient(broker.bootstrap) as admin:
            return await admin.delete_records("t-shift", {0: 2})
    assert asyncio.run(trim()) == {0: 2}
    reset(broker, "g-shift", "--topic", "t-shift", "--shift-by", "-50")
    assert first_read(broker, "g-shift", "t-shift") == {0: 2}               # clamped at the log start
    # --to-offset below the start and above the end is clamped the same way.
    reset(broker, "g-shift", "--topic", "t-shift", "--to-offset", "0")
    assert committed(broker, "g-shift", "t-shift") == {0: 2}
    reset(broker, "g-shift", "--topic", "t-shift", "--to-offset", "500")
    assert committed(broker, "g-shift", "t-shift") == {0: 12}


def test_partitions_topics_current_earliest_latest_and_dry_run(broker):
    create_topic(broker.bootstrap, "t-parts", 3)
    for p in range(3):
        produce(broker, "t-parts", 4, partition=p)
    create_topic(broker.bootstrap, "t-other", 1)
    produce(broker, "t-other", 3)
    reset(broker, "g-parts", "--topic", "t-parts:0,2", "--to-offset", "2")
    assert committed(broker, "g-parts", "t-parts", (0, 1, 2)) == {0: 2, 1: -1001, 2: 2}
    # The default is a dry run: the plan is printed, nothing changes.
    plan = kgroup(broker, "groups", "reset-offsets", "g-parts", "--topic", "t-parts", "--to-latest")
    assert "dry run" in plan.stderr and len(plan.stdout.splitlines()) == 4
    assert committed(broker, "g-parts", "t-parts", (0, 1, 2)) == {0: 2, 1: -1001, 2: 2}
    # --to-current keeps committed offsets and takes the log end where there is none.
    reset(broker, "g-parts", "--topic", "t-parts", "--to-current")
    assert committed(broker, "g-parts", "t-parts", (0, 1, 2)) == {0: 2, 1: 4, 2: 2}
    reset(broker, "g-parts", "--topic", "t-other", "--to-latest")
    # --all-topics: every topic the group has offsets for.
    reset(broker, "g-parts", "--all-topics", "--to-earliest")
    assert committed(broker, "g-parts", "t-parts", (0, 1, 2)) == {0: 0, 1: 0, 2: 0}
    assert first_read(broker, "g-parts", "t-other") == {0: 0}
    assert first_read(broker, "g-parts", "t-parts", (0, 1, 2)) == {0: 0, 1: 0, 2: 0}


def test_export_then_from_file_for_one_and_several_groups(broker, tmp_path):
    create_topic(broker.bootstrap, "t-csv", 2)
    for p in range(2):
        produce(broker, "t-csv", 5, partition=p)
    out = kgroup(broker, "groups", "reset-offsets", "g-csv1", "--topic", "t-csv", "--to-offset", "3", "--export")
    assert out.stdout.splitlines() == ["t-csv,0,3", "t-csv,1,3"]          # Kafka's CSV, no header
    plan = tmp_path / "plan.csv"
    plan.write_text("t-csv,0,1\nt-csv,1,4\n")
    reset(broker, "g-csv1", "--from-file", str(plan))
    assert committed(broker, "g-csv1", "t-csv", (0, 1)) == {0: 1, 1: 4}
    both = kgroup(broker, "groups", "reset-offsets", "--group", "g-csv1", "--group", "g-csv2", "--topic", "t-csv",
                  "--to-offset", "2", "--export")
    lines = both.stdout.splitlines()
    assert lines == ["g-csv1,t-csv,0,2", "g-csv1,t-csv,1,2", "g-csv2,t-csv,0,2", "g-csv2,t-csv,1,2"]
    plan.write_text("g-csv1,t-csv,0,0\ng-csv2,t-csv,1,5\n")
    kgroup(broker, "groups", "reset-offsets", "--group", "g-csv1", "--group", "g-csv2", "--from-file", str(plan),
           "--execute")
    assert committed(broker, "g-csv1", "t-csv", (0, 1)) == {0: 0, 1: 4}
    assert committed(broker, "g-csv2", "t-csv", (1,)) == {1: 5}
    assert first_read(broker, "g-csv1", "t-csv", (0, 1)) == {0: 0, 1: 4}


def test_all_groups_delete_offsets_and_alter_config(broker):
    create_topic(broker.bootstrap, "t-del1", 1)
    create_topic(broker.bootstrap, "t-del2", 1)
    for t in ("t-del1", "t-del2"):
        produce(broker, t, 3)
        reset(broker, "g-del", "--topic", t, "--to-latest")
    out = kgroup(broker, "groups", "delete-offsets", "g-del", "--topic", "t-del1")
    assert out.stdout.splitlines()[1].split() == ["t-del1", "0", "Successful"]
    assert committed(broker, "g-del", "t-del1") == {0: -1001} and committed(broker, "g-del", "t-del2") == {0: 3}
    reset(broker, "g-del-other", "--topic", "t-del2", "--to-latest")     # this test's own second group
    listed = json.loads(kgroup(broker, "groups", "list", "--format", "json").stdout)["groups"]
    assert {"g-del", "g-del-other"} <= {g["group"] for g in listed}
    dry = kgroup(broker, "groups", "reset-offsets", "--all-groups", "--all-topics", "--to-earliest", "--export")
    assert "g-del,t-del2,0,0" in dry.stdout.splitlines()
    out = kgroup(broker, "groups", "alter-config", "g-del", "--add-config", "consumer.session.timeout.ms=50000")
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[1:]}
    assert rows["consumer.session.timeout.ms"] == ["50000", "GROUP_CONFIG"]
    out = kgroup(broker, "groups", "alter-config", "g-del", "--delete-config", "consumer.session.timeout.ms")
    rows = {line.split()[0]: line.split()[1:] for line in out.stdout.splitlines()[1:]}
    assert rows["consumer.session.timeout.ms"] == ["45000", "DEFAULT_CONFIG"]


def test_describe_members_state_offsets_and_json_of_a_live_group(broker):
    create_topic(broker.bootstrap, "t-live", 2)
    produce(broker, "t-live", 4)
    create_topic(broker.bootstrap, "t-idle", 1)
    reset(broker, "g-idle", "--topic", "t-idle", "--to-latest")      # this test's own idle group
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-live", "client.id": "live-1",
                  "auto.offset.reset": "earliest", "group.instance.id": "inst-1"})
    c.subscribe(["t-live"])
    try:
        got = 0
        while got < 4:
            msg = c.poll(1)
            if msg is not None and msg.error() is None:
                got += 1
        c.commit(asynchronous=False)
        out = kgroup(broker, "groups", "describe", "g-live", "--members", "--verbose")
        head, row = out.stdout.splitlines()[:2]
        assert head.split() == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        cells = row.split()
        assert cells[2:] == ["inst-1", "/127.0.0.1", "live-1", "2", "-", "t-live:0,1", "-", "-"]
        state = kgroup(broker, "groups", "describe", "g-live", "--state").stdout.splitlines()
        assert state[0].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert state[1].split()[-2:] == ["Stable", "1"]
        offsets = kgroup(broker, "groups", "describe", "g-live").stdout.splitlines()
        assert offsets[0].split()[:6] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
        assert offsets[1].split()[:6] == ["g-live", "t-live", "0", "4", "4", "0"]
        assert offsets[1].split()[-1] == "live-1"
        # States filter in any case; a live group is Stable.
        listed = kgroup(broker, "groups", "list", "--state", "stable").stdout
        assert "g-live" in listed.split()
        doc = json.loads(kgroup(broker, "groups", "describe", "g-live", "g-idle", "--format", "json").stdout)
        live, idle = doc["groups"]
        assert set(live) == {"group", "state", "type", "protocol_type", "assignment_strategy", "coordinator",
                             "members", "offsets"}
        assert live["state"] == "Stable" and live["members"][0]["group_instance_id"] == "inst-1"
        assert live["members"][0]["metadata_bytes"] > 0 and live["members"][0]["assignment_bytes"] > 0
        assert live["type"] == "classic"
        assert live["members"][0]["partitions"] == [{"topic": "t-live", "partition": 0},
                                                    {"topic": "t-live", "partition": 1}]
        assert live["members"][0]["assignment"] == "t-live(0,1)" and live["members"][0]["assignment_bytes"] > 0
        assert live["offsets"][0] == {"topic": "t-live", "partition": 0, "current_offset": 4, "log_end_offset": 4,
                                      "lag": 0, "consumer_id": live["members"][0]["consumer_id"],
                                      "host": "/127.0.0.1", "client_id": "live-1",
                                      # a share group's columns (test_share_groups.py)
                                      "start_offset": None, "consumer_ids": None}
        assert idle["state"] == "Empty" and idle["members"] == []
        every = json.loads(kgroup(broker, "groups", "describe", "--all-groups", "--format", "json").stdout)
        assert {"g-live", "g-idle"} <= {g["group"] for g in every["groups"]}
        # An active group cannot be reset, and its subscribed topic's offsets cannot be deleted.
        refused = kgroup(broker, "groups", "reset-offsets", "g-live", "--all-topics", "--to-earliest", ok=False)
        assert refused.returncode == 1 and "is inactive, but the current state is Stable" in refused.stderr
        refused = kgroup(broker, "groups", "delete-offsets", "g-live", "--topic", "t-live", ok=False)
        assert refused.returncode == 1 and "GROUP_SUBSCRIBED_TO_TOPIC" in refused.stderr
    finally:
        c.close()
    # A static member does not leave on close: removed, so the group is not left Stable for
    # its session timeout under the other tests' --all-groups resets.
    kgroup(broker, "groups", "remove-members", "g-live", "--instance-id", "inst-1")
    described, = json.loads(kgroup(broker, "groups", "describe", "g-live", "--format", "json").stdout)["groups"]
    assert described["state"] == "Empty"


def test_consume_from_an_offset_or_a_time_with_a_format_and_headers(broker):
    create_topic(broker.bootstrap, "t-io", 1)
    kgroup(broker, "produce", "t-io", "--key-separator", ":", "--header", "app=kg", "--header", "v=1",
           stdin="".join(f"k{i}:v{i}\n" for i in range(6)))
    out = kgroup(broker, "consume", "t-io", "--offset", "4", "--timeout-ms", "1500",
                 "--format", "%t/%p/%o %k=%v [%h]").stdout
    assert out.splitlines() == ["t-io/0/4 k4=v4 [app=kg,v=1]", "t-io/0/5 k5=v5 [app=kg,v=1]"]
    out = kgroup(broker, "consume", "t-io", "--offset", "earliest", "--max-messages", "2", "--format", "%o\\t%v\\n")
    assert out.stdout == "0\tv0\n1\tv1\n"
    assert kgroup(broker, "consume", "t-io", "--offset", "latest", "--timeout-ms", "800").stdout == ""
    ts = [int(line) for line in kgroup(broker, "consume", "t-io", "--offset", "earliest", "--max-messages", "6",
                                        "--format", "%T").stdout.split()]
    out = kgroup(broker, "consume", "t-io", "--offset", f"@{ts[3]}", "--max-messages", "1", "--format", "%o")
    assert int(out.stdout) <= 3 and ts[int(out.stdout)] >= ts[3]        # the first record at/after that time
    # --offset wins over a group's committed offset, and the group's progress is committed.
    kgroup(broker, "consume", "t-io", "--group", "g-io", "--offset", "2", "--timeout-ms", "1000")
    assert committed(broker, "g-io", "t-io") == {0: 6}
    # A real client reads the headers the CLI wrote.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-io-hdr", "auto.offset.reset": "earliest"})
    c.subscribe(["t-io"])
    try:
        deadline = time.monotonic() + 30
        msg = None
        while (msg is None or msg.error() is not None) and time.monotonic() < deadline:
            msg = c.poll(1)
        assert msg is not None and msg.error() is None
        assert msg.headers() == [("app", b"kg"), ("v", b"1")] and msg.key().startswith(b"k")
    finally:
        c.close()


def test_topics_describe_alter_config_and_json(broker):
    create_topic(broker.bootstrap, "t-desc", 2)
    produce(broker, "t-desc", 5)
    kgroup(broker, "topics", "alter-config", "t-desc", "--add-config", "retention.ms=3600000,cleanup.policy=[delete]")
    out = kgroup(broker, "topics", "describe", "t-desc").stdout.splitlines()
    assert "Configs: cleanup.policy=delete,retention.ms=3600000" in out[0]
    assert out[1].split("\t")[-2:] == ["StartOffset: 0", "EndOffset: 5"]
    doc = json.loads(kgroup(broker, "topics", "describe", "t-desc", "--format", "json").stdout)
    (topic,) = doc["topics"]
    assert [(p["partition"], p["start_offset"], p["end_offset"]) for p in topic["partitions"]] == [(0, 0, 5), (1, 0, 0)]
    configs = {c["name"]: (c["value"], c["source"]) for c in topic["configs"]}
    assert configs["retention.ms"] == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["segment.bytes"][1] == "DEFAULT_CONFIG"
    listed = json.loads(kgroup(broker, "topics", "list", "--format", "json").stdout)["topics"]
    assert {"name": "t-desc", "internal": False, "partitions": 2} in listed
    # One partition per group-metadata partition (50), owned with it (README "Group events").
    assert {"name": "__kgroup_events", "internal": True, "partitions": 50} in listed
