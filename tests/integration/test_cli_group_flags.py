"""kafka-consumer-groups.sh's and rpk's group flags against a real `kgroup serve` (issue 34,
item 4): several groups deleted at once (--group repeated, --all-groups), a multi-group reset
that plans every inactive group and names the active one it skips (with a hint that works),
regex selection, lag per topic, --offsets/--state --verbose, --to-group, delete-offsets of
several groups and from a file (rpk's offset-delete --from-file)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.clients import create_topic
from tests.integration.test_cli_group_tools import committed as committed_offsets

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer  # noqa: E402

pytestmark = pytest.mark.integration
KGROUP = str(Path(sys.executable).with_name("kgroup"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("flags") / "data", group={"initial_rebalance_delay_ms": 0}).start()
    yield proc
    proc.finish()


def kgroup(broker, *args: str, status: int = 0) -> subprocess.CompletedProcess:
    done = kgroup_inprocess([*args, "--bootstrap-server", broker.bootstrap])    # the script's main, in-process
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    return done


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def committed(broker, group: str, topic: str) -> dict[int, int]:
    return committed_offsets(broker, group, topic, partitions=(0, 1))


def test_group_flags_on_idle_and_active_groups(broker, tmp_path):
    create_topic(broker.bootstrap, "t-f", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(6):
        p.produce("t-f", f"r{i}".encode(), partition=0)
    p.flush(15)

    # Several groups deleted at once: --group repeated, then --all-groups.
    for g in ("d-1", "d-2", "d-3"):
        kgroup(broker, "groups", "reset-offsets", g, "--topic", "t-f", "--to-latest", "--execute")
    out = kgroup(broker, "groups", "delete", "--group", "d-1", "--group", "d-2")
    assert out.stdout.splitlines() == ["Deleted group d-1.", "Deleted group d-2."]
    out = kgroup(broker, "groups", "delete", "--all-groups", "--timeout", "20000")
    assert out.stdout.splitlines() == ["Deleted group d-3."]

    for g in ("f-a", "f-b"):
        kgroup(broker, "groups", "reset-offsets", "--group", g, "--topic", "t-f", "--to-offset", "2", "--execute")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "f-live", "client.id": "live",
                  "auto.offset.reset": "earliest", "group.instance.id": "inst-f", "session.timeout.ms": 6000})
    c.subscribe(["t-f"])
    try:
        got, deadline = 0, time.monotonic() + 30
        while got < 6 and time.monotonic() < deadline:
            msg = c.poll(1)
            if msg is not None and msg.error() is None:
                got += 1
        assert got == 6
        c.commit(asynchronous=False)

        # One active group among three: the others' plans are printed, the active one is named
        # as skipped, with a hint that works for its static member; the exit status says so.
        out = kgroup(broker, "groups", "reset-offsets", "--group", "f-a", "--group", "f-live", "--group", "f-b",
                     "--topic", "t-f", "--to-earliest", status=1)
        assert [r[0] for r in rows(out.stdout)[1:]] == ["f-a", "f-a", "f-b", "f-b"]
        assert "skipped group 'f-live': assignments can only be reset if the group 'f-live' is inactive, but the " \
               "current state is Stable (1 member(s))" in out.stderr
        assert "`kgroup groups remove-members f-live --instance-id inst-f`" in out.stderr
        assert out.stderr.strip().splitlines()[-1].startswith("kgroup: error: skipped 1 active group(s): f-live")
        alone = kgroup(broker, "groups", "reset-offsets", "f-live", "--all-topics", "--to-earliest", status=1)
        assert "remove-members f-live --instance-id inst-f" in alone.stderr

        # rpk's regex selection and lag per topic.
        out = kgroup(broker, "groups", "describe", "--regex", "^f-[ab]$", "--lag-per-topic")
        table = rows(out.stdout)
        assert {r[0] for r in table if r[0] != "GROUP"} == {"f-a", "f-b"}
        assert [r for r in table if len(r) == 3 and r[0] != "GROUP"] == [["f-a", "t-f", "4"], ["f-b", "t-f", "4"]]

        # --offsets --verbose: Kafka's LEADER-EPOCH column; --state --verbose: GROUP-EPOCH.
        head = rows(kgroup(broker, "groups", "describe", "--group", "f-live", "--offsets", "--verbose").stdout)[0]
        assert head[:4] == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH"]
        head = rows(kgroup(broker, "groups", "describe", "f-live", "--state", "--verbose").stdout)[0]
        assert "GROUP-EPOCH" in head

        # rpk's seek --to-group: f-b takes f-live's committed offsets (of the partitions f-live
        # has one for: partition 1 keeps f-b's own).
        assert committed(broker, "f-live", "t-f") == {0: 6, 1: -1001}
        assert committed(broker, "f-b", "t-f") == {0: 2, 1: 0}
        kgroup(broker, "groups", "reset-offsets", "f-b", "--to-group", "f-live", "--execute")
        assert committed(broker, "f-b", "t-f") == {0: 6, 1: 0}

        # rpk's offset-delete --from-file.
        listing = tmp_path / "partitions.txt"
        listing.write_text("t-f 0\nt-f,1\n")
        out = kgroup(broker, "groups", "delete-offsets", "--group", "f-a", "--from-file", str(listing))
        assert rows(out.stdout)[1:] == [["t-f", "0", "Successful"], ["t-f", "1", "Successful"]]
        assert committed(broker, "f-a", "t-f") == {0: -1001, 1: -1001}
        # Several groups (--group repeated): each is tried; the active one's refusal is named.
        out = kgroup(broker, "groups", "delete-offsets", "--group", "f-b", "--group", "f-live", "--topic", "t-f:0",
                     status=1)
        assert rows(out.stdout) == [["GROUP", "TOPIC", "PARTITION", "STATUS"], ["f-b", "t-f", "0", "Successful"],
                                    ["GROUP", "TOPIC", "PARTITION", "STATUS"],
                                    ["f-live", "t-f", "0", "GROUP_SUBSCRIBED_TO_TOPIC"]]
        assert "kgroup: group 'f-live': offsets of 1 partition(s) not deleted: GROUP_SUBSCRIBED_TO_TOPIC" in out.stderr

        # Deleting an active group among others: the others go, the active one is named.
        out = kgroup(broker, "groups", "delete", "f-a", "f-live", status=1)
        assert out.stdout.splitlines() == ["Deleted group f-a."]
        assert "group 'f-live' not deleted: group 'f-live' still has active members" in out.stderr
        assert "stop the consumers of f-live" in out.stderr
    finally:
        c.close()
