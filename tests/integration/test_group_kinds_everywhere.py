"""Every kind of group in the registry (kgroup/group_types.py) shows in every tool and view.

One group of each kind -- made by `RECIPES`, a live member of kgroup's own client -- on a
real `kgroup serve` with the web console and the control API on; then each view is asked for
each group: the test bed's waits, `kgroup groups list` and `describe`, `kgroup groups watch`
in a real terminal (one group and all), the console's list and page (/api/groups, the live
stream a page opens) and /api/groups/NAME, the /metrics gauges, the group events, the
broker's load log and coordinator_loaded events after a restart, and `groups reset-offsets`,
`delete-offsets` and `delete` once the members are gone; then, on a cluster of two, the
coordinator_unloaded / coordinator_loaded events of a moved coordinator.

A kind added to the registry without a recipe here fails every test of this module: add one,
and make every view show the new kind.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kgroup.client import Consumer, ShareConsumer
from kgroup.client.admin import AdminClient
from kgroup.group_types import GROUP_TYPES, GroupType
from kgroup.storage.group_hash import partition_for_group
from kgroup.testing import Broker, Cluster
from kgroup.testing.ports import free_port
from kgroup.wire.codec import request_class
from kgroup.wire.kio_build import build, item
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.clients import produce_keyed
from tests.integration.test_watch_terminal import TMUX, Tmux
from tests.integration.testbed_support import CONSUMER_PROTOCOL_FAST
from tests.integration.waits import wait_for

pytestmark = pytest.mark.integration

KGROUP = str(Path(sys.executable).with_name("kgroup"))
TOPIC = "kinds"
EVENTS = "__kgroup_events"
FAST = {**CONSUMER_PROTOCOL_FAST, "share_heartbeat_interval_ms": 500, "share_session_timeout_ms": 6_000,
        "share_auto_offset_reset": "earliest"}
KINDS = [kind.name for kind in GROUP_TYPES]
# Views a kind does not show yet, per test: (test name, kind) -> why. Strict, so a view that
# starts showing the kind fails here until its entry goes.
MISSING: dict[tuple[str, str], str] = {}


def kinds_of(test: str) -> list:
    """KINDS as a test's parameters, each view a kind does not show yet an xfail naming it."""
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=MISSING[(test, name)]))
            if (test, name) in MISSING else name for name in KINDS]


# ---- making a group of each kind ------------------------------------------------------------

class Member(threading.Thread):
    """One live member of kgroup's own client, polling (and committing) until stopped."""

    def __init__(self, kind: GroupType, bootstrap: str, group: str) -> None:
        super().__init__(name=f"member-{group}", daemon=True)
        self.kind, self.bootstrap, self.group = kind, bootstrap, group
        self.stopping = threading.Event()
        self.read = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(RECIPES[self.kind.name](self))
        except BaseException as exc:       # surfaced by `stop`
            self.error = exc

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        assert not self.is_alive() and self.error is None, self.error


async def _polling_consumer(m: Member) -> None:
    """A consumer of the classic or the consumer protocol (group.protocol = the kind's name)."""
    async with Consumer({"bootstrap.servers": m.bootstrap, "group.id": m.group, "group.protocol": m.kind.name,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 6_000, "heartbeat.interval.ms": 500}) as c:
        c.subscribe([TOPIC])
        while not m.stopping.is_set():
            got = await c.getmany(timeout_ms=200)
            if got:
                m.read += sum(len(records) for records in got.values())
                await c.commit()


async def _share_consumer(m: Member) -> None:
    async with ShareConsumer({"bootstrap.servers": m.bootstrap, "group.id": m.group}) as c:
        c.subscribe([TOPIC])
        while not m.stopping.is_set():
            m.read += len(await c.poll(0.2))


async def _streams_member(m: Member) -> None:
    """A streams member spoken on the wire (kgroup's client has no Kafka Streams runtime): a
    topology of one subtopology reading TOPIC; it heartbeats what it holds and commits the
    end of each source partition of its active tasks, as a Streams app commits."""
    from tests.streams.raw import Member as StreamsMember, topology
    from tests.streams.wire import Wire

    commit_cls = request_class(8, 9)
    t_cls = item(commit_cls, "topics")
    p_cls = item(t_cls, "partitions")
    with Wire(m.bootstrap) as wire:
        member = StreamsMember(wire, m.group, f"{m.group}-member", f"{m.group}-process",
                               topology({"id": "0", "sources": [TOPIC]}))
        member.heartbeat()
        while not m.stopping.is_set():
            await asyncio.sleep(0.3)
            member.heartbeat()
            if member.active:
                wire.coordinator_call(m.group, 8, 9, group_id=m.group, generation_id_or_member_epoch=member.epoch,
                                      member_id=member.member_id, group_instance_id=None, topics=(build(
                                          t_cls, name=TOPIC, partitions=tuple(
                                              build(p_cls, partition_index=p, committed_offset=10,
                                                    committed_leader_epoch=-1, committed_metadata="")
                                              for _, p in sorted(member.active))),))
                m.read = len(member.active)
        member.leave()


# kind name -> how a live member of a group of that kind runs.
RECIPES = {"classic": _polling_consumer, "consumer": _polling_consumer, "share": _share_consumer,
           "streams": _streams_member}


def group_of(kind: str) -> str:
    return f"kinds-{kind}"


def kind_named(name: str) -> GroupType:
    kind = next(k for k in GROUP_TYPES if k.name == name)
    if name not in RECIPES:
        pytest.fail(f"no recipe makes a {name} group: add one to RECIPES, and make every view show the kind")
    return kind


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    http = free_port()
    b = Broker(tmp_path_factory.mktemp("kinds"), settings={"http_listen": f"127.0.0.1:{http}"}, group=FAST).start()
    b.http = f"http://127.0.0.1:{http}"
    b.create_topic(TOPIC, 2)
    produce_keyed(b.bootstrap, TOPIC, 20)
    b.members = {}
    try:
        live(b, *(kind.name for kind in GROUP_TYPES if kind.name in RECIPES))
        yield b
    finally:
        for member in b.members.values():
            member.stopping.set()
        print(b.log()[-6000:])
        b.close()


# Each test says what it needs of the module's groups -- `live` (a member, Stable) or `idle`
# (there, no member) -- and gets it whatever ran before it: the tests run in any order
# (`make stress` shuffles them), and some stop the members, restart the broker or delete a group.

def live(broker, *names: str) -> None:
    """The groups of these kinds each have their one live member, Stable: a member stopped
    by an earlier test (or never started) is started anew, in the group it left."""
    wanted = [name for name in names if name not in broker.members or broker.members[name].stopping.is_set()
              or not broker.members[name].is_alive()]
    if any(name in broker.members for name in wanted):
        # A member that died surfaces its error here; the new members have records to read
        # past the offsets the old ones committed or acknowledged.
        for name in wanted:
            if name in broker.members:
                broker.members[name].stop()
        produce_keyed(broker.bootstrap, TOPIC, 10)
    started = []
    for name in wanted:
        m = broker.members[name] = Member(kind_named(name), broker.bootstrap, group_of(name))
        m.start()
        started.append(m)
    for m in started:
        broker.wait_for_group(m.group, state="Stable", members=1, timeout_ms=30_000)
        wait_for(lambda m=m: m.read > 0, 30, what=f"the {m.kind.name} group's member reads")


def idle(broker, *names: str) -> None:
    """The groups of these kinds are there, Empty, with the offsets their members committed:
    a deleted group is made again by a member first; live members are stopped."""
    listed = {g["group"] for g in json.loads(kgroup(broker, "groups", "list", "--format", "json"))["groups"]}
    live(broker, *(name for name in names if group_of(name) not in listed))
    for name in names:
        m = broker.members.get(name)
        if m is not None and not m.stopping.is_set():
            m.stop()
    for name in names:
        broker.wait_for_group(group_of(name), state="Empty", members=0, timeout_ms=30_000)


def kgroup(broker, *args: str) -> str:
    done = kgroup_inprocess([*args, "--bootstrap-server", broker.bootstrap])    # the script's main, in-process
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout


def http_get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def events_of(bootstrap: str, group: str) -> list[dict[str, Any]]:
    """Every event of `group` on __kgroup_events so far, in order."""
    async def read() -> list[dict[str, Any]]:
        async with AdminClient(bootstrap) as admin:
            count = len((await admin.describe_topic(EVENTS)).partitions)
            partition = partition_for_group(group, count)
            offset, out = 0, []
            while True:
                got = (await admin.fetch_many(EVENTS, {partition: offset}, max_wait_ms=0))[partition]
                if not got.records:
                    return out
                for r in got.records:
                    offset = r.offset + 1
                    if r.key == group.encode():
                        out.append(json.loads(r.value))
    return asyncio.run(read())


# ---- each view, for each kind --------------------------------------------------------------

@pytest.mark.parametrize("name", KINDS)
def test_the_test_bed_waits_for_a_group_of_every_kind(broker, name):
    kind = kind_named(name)
    live(broker, name)
    view = broker.wait_for_group(group_of(name), state="Stable", members=1, timeout_ms=10_000)
    assert view["kind"] == kind.name and len(view["members"]) == 1
    assert (view["group_epoch"] if kind.by_epoch else view["generation"]) >= 1


@pytest.mark.parametrize("name", KINDS)
def test_groups_list_and_describe_show_every_kind(broker, name):
    kind, group = kind_named(name), group_of(name)
    live(broker, name)
    listed = {g["group"]: g for g in json.loads(kgroup(broker, "groups", "list", "--format", "json"))["groups"]}
    assert listed[group]["type"] == kind.name and listed[group]["state"] == "Stable"
    by_type = json.loads(kgroup(broker, "groups", "list", "--type", kind.name, "--format", "json"))["groups"]
    assert group in {g["group"] for g in by_type}
    described, = json.loads(kgroup(broker, "groups", "describe", group, "--format", "json"))["groups"]
    assert described["type"] == kind.name and described["state"] == "Stable" and len(described["members"]) == 1
    assert {row["topic"] for row in described["offsets"]} == {TOPIC}
    assert "Stable" in kgroup(broker, "groups", "describe", group, "--state")
    members = kgroup(broker, "groups", "describe", group, "--members").splitlines()
    assert len(members) == 2
    if kind.name == "streams":
        # kafka-streams-groups.sh's columns: the member's process and its tasks by kind.
        assert members[0].split() == ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"]
        assert "ACTIVE: 0:[0,1];" in members[1], members
        assert described["members"][0]["tasks"]["active"] == {"0": [0, 1]}


@pytest.mark.skipif(TMUX is None, reason="tmux is needed (make test installs it)")
@pytest.mark.parametrize("name", KINDS)
def test_groups_watch_shows_every_kind(broker, name, tmp_path):
    kind, group = kind_named(name), group_of(name)
    live(broker, name)
    unit = "EPOCH" if kind.by_epoch else "GENERATION"
    term = Tmux(f"kinds-watch-{tmp_path.name}"[:60], f"{KGROUP} groups watch {group} --bootstrap-server {broker.bootstrap} "
                                       f"--interval-ms 300; sleep 60")
    try:
        screen = term.wait(lambda s: "STATE Stable" in s and "MEMBERS 1" in s, f"the {name} group's view")
        assert f"{unit} " in screen and "NOT_FOUND" not in screen and "! " not in screen.splitlines()[1]
        assert any(line.split()[:2] == [TOPIC, "0"] for line in screen.splitlines())
        term.keys("q")
    finally:
        term.close()
    everyone = Tmux(f"kinds-all-{tmp_path.name}"[:60], f"{KGROUP} groups watch --bootstrap-server {broker.bootstrap} "
                                              f"--interval-ms 300; sleep 60")
    try:
        screen = everyone.wait(lambda s: group in s, "the all-groups view")
        row, = [line.split() for line in screen.splitlines() if line.split()[:1] == [group]]
        assert row[1:4] == [kind.name, "Stable", "1"]
    finally:
        everyone.close()


@pytest.mark.parametrize("name", KINDS)
def test_the_console_list_page_and_api_show_every_kind(broker, name):
    kind, group = kind_named(name), group_of(name)
    live(broker, name)
    status, body = http_get(f"{broker.http}/api/groups")
    listed = {g["group"]: g for g in json.loads(body)["groups"]}
    assert status == 200 and listed[group]["kind"] == kind.name and listed[group]["members"] == 1
    status, body = http_get(f"{broker.http}/api/groups/{group}")
    detail = json.loads(body)
    assert status == 200 and detail["kind"] == kind.name and detail["state"] == "Stable"
    assert len(detail["members"]) == 1 and detail["members"][0]["partitions"]
    assert {p["topic"] for p in detail["partitions"]} == {TOPIC}
    # The page: what its live stream sends for the group it shows (null: "No such group").
    with urllib.request.urlopen(f"{broker.http}/api/stream?group={group}", timeout=10) as stream:
        event = None
        for raw in stream:
            line = raw.decode().strip()
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: ") and event == "group":
                page = json.loads(line[len("data: "):])
                break
    assert page is not None and page["group"] == group and page["kind"] == kind.name


@pytest.mark.parametrize("name", KINDS)
def test_the_metrics_gauges_have_every_kind(broker, name):
    kind, group = kind_named(name), group_of(name)
    live(broker, name)
    status, body = http_get(f"{broker.http}/metrics")
    samples = [s for f in text_string_to_metric_families(body.decode()) for s in f.samples]
    gauge = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
    for state in kind.states:
        assert ("kgroup_groups", (("kind", kind.name), ("state", state))) in gauge
    assert gauge[("kgroup_groups", (("kind", kind.name), ("state", "Stable")))] >= 1
    assert gauge[("kgroup_group_members", (("group", group), ("kind", kind.name)))] == 1
    assert gauge[("kgroup_group_generation", (("group", group), ("kind", kind.name)))] >= 1


# Suffixes the exposition format gives to the samples of counters, histograms and summaries:
# a gauge named with one reads as part of another metric (kgroup_group_lag_sum was one).
RESERVED_SUFFIXES = ("_total", "_sum", "_count", "_bucket", "_created", "_info")
# Label names that would name a group kind under another name than `kind`.
OTHER_KIND_LABELS = {"protocol", "group_type", "type", "group_kind"}


def test_the_metrics_follow_prometheus_conventions(broker):
    """The scrape of a broker with a group of every kind, parsed by prometheus_client: names
    by type, one label name (`kind`) for the group kind, every kind present under it."""
    live(broker, *KINDS)
    status, body = http_get(f"{broker.http}/metrics")
    assert status == 200
    families = [f for f in text_string_to_metric_families(body.decode()) if f.name.startswith("kgroup_")]
    assert len(families) >= 10
    kinds_seen: set[str] = set()
    for f in families:
        assert re.fullmatch(r"kgroup_[a-z][a-z0-9_]*", f.name), f.name
        names = {s.name for s in f.samples}
        if f.type == "gauge":
            assert not f.name.endswith(RESERVED_SUFFIXES), f"gauge {f.name} ends in a reserved suffix"
            assert names <= {f.name}, names
        elif f.type == "counter":
            # The parser names a counter's family without `_total`; its samples carry it.
            assert not f.name.endswith("_total") and names <= {f.name + "_total", f.name + "_created"}, names
        elif f.type == "histogram":
            assert f.name.endswith("_seconds"), f"histogram {f.name} does not name its unit"
            assert names <= {f.name + s for s in ("_bucket", "_sum", "_count", "_created")}, names
        else:
            pytest.fail(f"{f.name}: a {f.type} (expected gauge, counter or histogram)")
        for s in f.samples:
            assert not set(s.labels) & OTHER_KIND_LABELS, f"{s.name} names the group kind {set(s.labels)}"
            if "kind" in s.labels:
                assert s.labels["kind"] in KINDS, s
                kinds_seen.add(s.labels["kind"])
    assert kinds_seen == set(KINDS)
    by_name = {f.name: f for f in families}
    # Every group's members, generation and lag are there, by kind where the metric has one.
    for name in KINDS:
        group = group_of(name)
        assert any(s.labels == {"group": group, "kind": name} for s in by_name["kgroup_group_members"].samples)
    assert {s.labels["group"] for s in by_name["kgroup_group_total_lag"].samples} >= {group_of("classic")}
    assert {s.labels["kind"] for s in by_name["kgroup_rebalance_duration_seconds"].samples} >= {"classic"}
    assert {s.labels["event"] for s in by_name["kgroup_group_events"].samples} >= {"member_joined"}


@pytest.mark.parametrize("name", kinds_of("test_the_group_events_tell_of_every_kind"))
def test_the_group_events_tell_of_every_kind(broker, name):
    kind, group = kind_named(name), group_of(name)
    live(broker, name)
    events = events_of(broker.bootstrap, group)
    assert events and all(e["protocol"] == kind.name for e in events)
    kinds = [e["kind"] for e in events]
    assert "member_joined" in kinds and "rebalance_started" in kinds and "assignment_changed" in kinds


def test_a_restart_loads_every_kind_logs_them_and_tells_each_group_its_coordinator_loaded(broker):
    for name in KINDS:
        kind_named(name)
    idle(broker, *KINDS)
    load_line = r"coordinator loaded: records=\d+ groups=(\d+)"
    before = len(re.findall(load_line, broker.log()))     # the log goes on across restarts
    broker.restart()
    # restart() returns once the broker listens; the load may log a moment later (under
    # load, a second), and the first start's "groups=0" line is still the last one till then.
    wait_for(lambda: len(re.findall(load_line, broker.log())) > before, 30,
             what="the restarted broker's coordinator load line")
    loaded = re.findall(load_line, broker.log())
    # The load log counts every group the tools list, of every kind.
    listed = {g["group"] for g in json.loads(kgroup(broker, "groups", "list", "--format", "json"))["groups"]}
    assert {group_of(name) for name in KINDS} <= listed
    assert loaded and int(loaded[-1]) == len(listed), (loaded, listed)
    for name in KINDS:
        wait_for(lambda: any(e["kind"] == "coordinator_loaded" for e in events_of(broker.bootstrap, group_of(name))),
                 20, what=f"coordinator_loaded of the {name} group")
        last = [e for e in events_of(broker.bootstrap, group_of(name)) if e["kind"] == "coordinator_loaded"][-1]
        assert last["protocol"] == name and last["state"] == "Empty" and isinstance(last["node"], int)


@pytest.mark.parametrize("name", kinds_of("test_reset_offsets_delete_offsets_and_delete_act_on_every_kind"))
def test_reset_offsets_delete_offsets_and_delete_act_on_every_kind(broker, name):
    kind_named(name)
    group = group_of(name)
    idle(broker, name)
    kgroup(broker, "groups", "reset-offsets", "--group", group, "--topic", TOPIC, "--to-earliest", "--execute")
    described, = json.loads(kgroup(broker, "groups", "describe", group, "--format", "json"))["groups"]
    at = {r["partition"]: r["start_offset"] if r["start_offset"] is not None else r["current_offset"]
          for r in described["offsets"]}
    assert at == {0: 0, 1: 0}, described
    kgroup(broker, "groups", "delete-offsets", group, "--topic", TOPIC)
    described, = json.loads(kgroup(broker, "groups", "describe", group, "--format", "json"))["groups"]
    assert all(r["current_offset"] is None and r["start_offset"] is None for r in described["offsets"])
    kgroup(broker, "groups", "delete", group)
    listed = {g["group"] for g in json.loads(kgroup(broker, "groups", "list", "--format", "json"))["groups"]}
    assert group not in listed
    assert events_of(broker.bootstrap, group)[-1]["state"] == "Dead"


# ---- a moved coordinator ---------------------------------------------------------------------

def test_a_moved_coordinator_tells_every_kind_it_was_unloaded_and_loaded(tmp_path):
    for name in KINDS:
        kind_named(name)
    with Cluster(nodes=2, group=FAST) as cluster:
        cluster.create_topic(TOPIC, 2)
        produce_keyed(cluster.bootstrap, TOPIC, 10)
        members = [Member(kind, cluster.bootstrap, group_of(kind.name)) for kind in GROUP_TYPES]
        for m in members:
            m.start()
        try:
            for m in members:
                view = cluster.wait_for_group(m.group, state="Stable", members=1, timeout_ms=30_000)
                cluster.move_coordinator(m.group, 1 - view["coordinator"])
                m.moved_from = view["coordinator"]
            for m in members:
                def moved() -> bool:
                    kinds = [(e["kind"], e.get("node")) for e in events_of(cluster.bootstrap, m.group)]
                    return (("coordinator_unloaded", m.moved_from) in kinds
                            and ("coordinator_loaded", 1 - m.moved_from) in kinds)
                wait_for(moved, 30, what=f"the {m.kind.name} group's coordinator events")
                assert {e["protocol"] for e in events_of(cluster.bootstrap, m.group)} == {m.kind.name}
        finally:
            for m in members:
                m.stop()
