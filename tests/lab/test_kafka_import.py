"""`kgroup lab import` of a real Apache Kafka 4.4's group history, checked against Kafka's own
DescribeGroups / ConsumerGroupDescribe taken during the run.

One group goes through what production groups go through: classic members join, one leaves,
one crashes (kill -9: its session expires), a consumer-protocol member joins (Kafka converts
the group to a consumer group: the migration of KIP-848), and the last classic member leaves.
After each step the test waits until Kafka describes the group as settled and keeps what it
said. Then the broker's __consumer_offsets is imported over the wire, and from a copy of its
log segments: at every step the imported history has a snapshot with exactly the members,
instance ids, assignments (and, for the consumer protocol, group epoch, assignment epoch and
member epochs) Kafka described, and the classic generations the members were given. The
import then replays under another setting. Normalization: none (topic ids are named through
the cluster's Metadata).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from kgroup.cli.lab_import import fetch_records, segment_records
from kgroup.cli.main import main
from kgroup.client import AdminClient
from kgroup.client.cluster import request_fields
from kgroup.lab.kafka_history import history
from kgroup.lab.recorded import recording
from kgroup.lab.results import simulate
from kgroup.lab.scenario import scenario_from_dict
from kgroup.wire.api_keys import ApiKey
from tests.integration.waits import hold, pace

pytestmark = pytest.mark.integration

GROUP, TOPIC = "imported-orders", "imported-orders"

# A consumer that reports its member id and generation (or member epoch) after every
# assignment, one JSON a line; SIGTERM closes it (LeaveGroup), SIGKILL is a crash.
MEMBER = r"""
import asyncio, json, signal, sys
from kgroup.client import Consumer, ConsumerRebalanceListener

async def main(bootstrap, group, topic, protocol):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    class Report(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):
            m = c.group.member
            print(json.dumps({"member": m.member_id, "generation": getattr(m, "generation", None),
                              "epoch": getattr(m, "member_epoch", None)}), flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await c.start()
    c.subscribe([topic], listener=Report())
    while not stop.is_set():
        await c.getmany(timeout_ms=100)
    await c.close()

asyncio.run(main(*sys.argv[1:]))
"""


class Member:
    def __init__(self, bootstrap: str, protocol: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", MEMBER, bootstrap, GROUP, TOPIC, protocol],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})

        self.reports: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.reports.append(json.loads(line))

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)

    def crash(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


def describe(bootstrap: str) -> dict:
    """What Kafka says of the group: ConsumerGroupDescribe, else DescribeGroups."""
    async def run() -> dict:
        async with AdminClient(bootstrap) as admin:
            resp = await admin._call_coordinator(
                GROUP, ApiKey.CONSUMER_GROUP_DESCRIBE, request_fields(group_ids=[GROUP], include_authorized_operations=False),
                lambda r: 0)
            g = resp.groups[0]
            if int(g.error_code) == 0:
                return {"protocol": "consumer", "state": g.group_state, "epoch": int(g.group_epoch),
                        "target": int(g.assignment_epoch),
                        "members": {m.member_id: (m.instance_id, int(m.member_epoch), tuple(sorted(
                            (tp.topic_name, p) for tp in m.assignment.topic_partitions for p in tp.partitions)))
                            for m in g.members}}
            d = await admin.describe_group(GROUP)
            return {"protocol": "classic", "state": d.state,
                    "members": {m.member_id: (m.group_instance_id, None, tuple(sorted(
                        (t, p) for t, ps in (m.assignment or {}).items() for p in ps))) for m in d.members}}
    return asyncio.run(run())


def settled(bootstrap: str, members: int, protocol: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        d = describe(bootstrap)
        done = d["protocol"] == protocol and d["state"] == "Stable" and len(d["members"]) == members
        if done and protocol == "consumer":
            done = all(e == d["target"] for _, e, _ in d["members"].values())
        if done and sum(len(parts) for _, _, parts in d["members"].values()) == 4:
            return d
        assert time.monotonic() < deadline, f"the group did not settle: {d}"
        pace(0.2)


def generations(*members: Member) -> dict[str, int]:
    """The last generation each live classic member reported."""
    return {r["member"]: r["generation"] for m in members for r in m.reports}


def test_kafka_group_history_imports_exactly_and_replays(kafka_reference, tmp_path, capsys):
    bootstrap = kafka_reference.bootstrap

    async def create() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.create_topics({TOPIC: 4})
    asyncio.run(create())

    steps: list[dict] = []
    seen_generations: dict[str, set[int]] = {}

    def step(members: int, protocol: str, *live: Member) -> None:
        d = settled(bootstrap, members, protocol)
        steps.append(d)
        hold(0.3, "the live members report the generation the settled group gave them")
        if protocol == "classic":                # (a classic member of a consumer group is
            for member, gen in generations(*live).items():   # given its member epoch instead)
                seen_generations.setdefault(member, set()).add(gen)

    a = Member(bootstrap, "classic")
    step(1, "classic", a)
    b = Member(bootstrap, "classic")
    step(2, "classic", a, b)
    c = Member(bootstrap, "classic")
    step(3, "classic", a, b, c)
    b.leave()
    step(2, "classic", a, c)
    c.crash()                                     # gone without a LeaveGroup: expires after 6 s
    step(1, "classic", a)
    d = Member(bootstrap, "consumer")             # the group becomes a consumer group
    step(2, "consumer", a, d)
    a.leave()
    step(1, "consumer", d)
    d.leave()

    # Over the wire, from the running broker.
    records, names = asyncio.run(fetch_records(bootstrap, {}))
    found = history(records, names)
    snaps = found.of(GROUP)
    # Every step Kafka described has an imported snapshot, in the order Kafka went through
    # them: the membership timeline.
    at = -1
    for want in steps:
        members = {mid: (inst, epoch, parts) for mid, (inst, epoch, parts) in want["members"].items()}
        matches = [i for i, s in enumerate(snaps) if i > at and s.protocol == want["protocol"]
                   and {m.member_id: (m.instance_id, m.member_epoch, m.partitions) for m in s.members} == members
                   and (want["protocol"] == "classic" or (s.generation, s.target_epoch) == (want["epoch"], want["target"]))]
        assert matches, f"no imported snapshot after #{at} matches what Kafka described: {want}"
        at = matches[0]
    # The classic generations the members were given are the imported ones, in order.
    classic = [s for s in snaps if s.protocol == "classic" and s.members]
    for member, gens in seen_generations.items():
        imported = {s.generation for s in classic if member in {m.member_id for m in s.members}}
        assert gens <= imported, (member, gens, imported)
    kinds = [e["kind"] for e in found.events if e["group"] == GROUP]
    assert kinds.count("member_joined") == 4 and kinds.count("member_left") == 4
    assert any(e["kind"] == "group_state" and "consumer protocol" in e["reason"] for e in found.events)

    # From a copy of its log segments: the same history.
    copy = tmp_path / "logs"
    shutil.copytree(kafka_reference.data_dir, copy, ignore=shutil.ignore_patterns("*.lock"))
    from_segments = history(list(segment_records(copy)), names)
    assert from_segments.of(GROUP) == snaps

    # The CLI writes the events, and a replay under another setting runs.
    events = tmp_path / "events.jsonl"
    assert main(["lab", "import", "--bootstrap-server", bootstrap, "--out", str(events)]) == 0
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e for e in lines if e["group"] == GROUP] == [e for e in found.events if e["group"] == GROUP]
    rec = recording(lines, GROUP, overrides={"static": True, "session_timeout_ms": 10_000})
    assert rec.scenario["topics"] == {TOPIC: 4}
    assert simulate(scenario_from_dict(rec.scenario)).summary["double_ownership"] == 0
    capsys.readouterr()
    assert main(["lab", "replay", str(events), "--group", GROUP, "--as", "protocol=consumer,assignor=uniform",
                 "--out", str(tmp_path / "replay")]) == 0
    assert "protocol=consumer" in capsys.readouterr().out
