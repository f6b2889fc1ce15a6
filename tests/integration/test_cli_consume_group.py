"""`kgroup consume --group G` joins G as a member, as `kafka-console-consumer --group` does.

Real `kgroup consume` processes against a real `kgroup serve`: two split a 6-partition topic,
a third joins and the three rebalance, one stopped with SIGTERM leaves at once (the others
take its partitions back) — each step seen in `kgroup groups describe G --members`, the
tool a user watches it with. Every record produced is printed once, by one member, and what
was printed is committed when the members exit (Ctrl-C, SIGTERM). The same with
`--group-protocol consumer` (KIP-848), and a share-group member (`--group-protocol share`,
KIP-932) that acknowledges what it printed: what it accepted never comes back, what it did
not print (past --max-messages) goes to the next member.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kgroup.testing.process import ChildProcess
from tests.integration.broker_process import BrokerProcess
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.waits import until, wait_for

pytestmark = pytest.mark.integration
KGROUP = str(Path(sys.executable).with_name("kgroup"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("consume-group") / "data",
                         group={"initial_rebalance_delay_ms": 0, "share_heartbeat_interval_ms": 1000,
                                "consumer_heartbeat_interval_ms": 500,
                                "consumer_min_heartbeat_interval_ms": 500}).start()
    yield proc
    proc.finish()


def run(broker, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`kgroup ARGS --bootstrap-server B`: a `consume` (what this module is about) as its own
    process; the tools around it (topics, produce, groups describe, polled back to back
    while the members rebalance) in this process, through the script's own `main`."""
    argv = [*args, "--bootstrap-server", broker.bootstrap]
    if args[0] == "consume":
        return subprocess.run([KGROUP, *argv], input=stdin, capture_output=True, text=True, timeout=60)
    return kgroup_inprocess(argv, stdin)


def kgroup(broker, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    done = run(broker, *args, stdin=stdin)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


class ConsoleConsumer:
    """One `kgroup consume` process; the lines it prints are collected as they come."""

    def __init__(self, broker, *args: str) -> None:
        self.child = ChildProcess([KGROUP, "consume", *args, "--bootstrap-server", broker.bootstrap],
                                  name="kgroup consume " + " ".join(args), stdout_pipe=True).start()
        self.printed: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.child.lines():
            with self._lock:
                self.printed.append(line.rstrip("\n"))

    def lines(self) -> list[str]:
        with self._lock:
            return list(self.printed)

    def stop(self, sig: int) -> tuple[int, str]:
        """Send `sig`, wait for the exit; (status, its stderr)."""
        self.child.signal(sig)
        status = self.child.wait(30)
        self._reader.join(10)
        return status, self.child.log().partition("---- stdout ----")[0]


def members(broker, group: str) -> list[int]:
    """The partition counts of the group's members, sorted; [] while it rebalances (as
    `groups describe --members` says then), has none or does not exist yet."""
    done = run(broker, "groups", "describe", group, "--members")
    if done.returncode == 1 and "does not exist" in done.stderr:
        return []
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    if "rebalancing" in done.stderr:
        return []
    rows = [line.split() for line in done.stdout.splitlines()[1:] if line.startswith(group + " ")]
    return sorted(int(row[-1]) for row in rows)


def produce(broker, topic: str, values: range) -> list[str]:
    """Keyed records, so they spread over the partitions."""
    lines = [f"v{i}" for i in values]
    kgroup(broker, "produce", topic, "--key-separator", ":", stdin="".join(f"k{v}:{v}\n" for v in lines))
    return lines


def lag(broker, group: str, topic: str) -> dict[int, tuple[str, str]]:
    """partition -> (committed offset, log-end offset) by `groups describe`."""
    out = kgroup(broker, "groups", "describe", group).stdout
    return {int(row[2]): (row[3], row[4]) for line in out.splitlines()
            if (row := line.split())[:2] == [group, topic]}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_two_console_consumers_split_a_topic_and_a_third_joins(broker, protocol):
    topic, group = f"split-{protocol}", f"g-split-{protocol}"
    kgroup(broker, "topics", "create", topic, "--partitions", "6")
    argv = [topic, "--group", group, "--from-beginning", "--group-protocol", protocol]
    first = [ConsoleConsumer(broker, *argv), ConsoleConsumer(broker, *argv)]
    wait_for(lambda: members(broker, group) == [3, 3], 60, what="two members with 3 partitions each")
    sent = produce(broker, topic, range(60))

    def printed(consumers) -> list[str]:
        return [line for c in consumers for line in c.lines()]
    wait_for(lambda: len(printed(first)) >= 60, 60, what="the 60 records printed")
    assert sorted(printed(first)) == sorted(sent)               # each record once, by one member
    assert all(c.lines() for c in first)                         # both had a share of the keys

    third = ConsoleConsumer(broker, *argv)
    everyone = [*first, third]
    wait_for(lambda: members(broker, group) == [2, 2, 2], 60, what="three members with 2 partitions each")
    sent += produce(broker, topic, range(60, 120))
    wait_for(lambda: len(printed(everyone)) >= 120, 60, what="the next 60 records printed")
    assert sorted(printed(everyone)) == sorted(sent)
    assert third.lines()

    # SIGTERM: commits what it printed and leaves at once (no session timeout to wait for).
    status, err = first[0].stop(signal.SIGTERM)
    assert status == 143 and "kgroup: terminated" in err and "Traceback" not in err, err
    wait_for(lambda: members(broker, group) == [3, 3], 30, what="the two left to take its partitions")
    sent += produce(broker, topic, range(120, 150))
    wait_for(lambda: len(printed(everyone)) >= 150, 60, what="the last 30 records printed")
    assert sorted(printed(everyone)) == sorted(sent)

    # Ctrl-C: the same, and the group ends Empty with every printed record committed.
    for c in everyone[1:]:
        status, err = c.stop(signal.SIGINT)
        assert status == 130 and err.rstrip().endswith("kgroup: interrupted") and "Traceback" not in err, err
    offsets = until(lambda: lag(broker, group, topic), 30, what="the group's committed offsets")
    assert len(offsets) == 6 and all(committed == end for committed, end in offsets.values()), offsets
    assert "Empty" in kgroup(broker, "groups", "describe", group, "--state").stdout


def test_no_join_keeps_the_simple_consumer(broker):
    kgroup(broker, "topics", "create", "simple", "--partitions", "2")
    sent = produce(broker, "simple", range(10))
    done = kgroup(broker, "consume", "simple", "--group", "g-simple", "--no-join", "--from-beginning",
                  "--timeout-ms", "1500")
    assert sorted(done.stdout.split()) == sorted(sent)
    assert all(c == e for c, e in lag(broker, "g-simple", "simple").values())
    assert members(broker, "g-simple") == []      # it never joined


def test_a_share_group_member_prints_and_acknowledges(broker):
    kgroup(broker, "topics", "create", "queue", "--partitions", "1")
    kgroup(broker, "groups", "alter-config", "g-share", "--add-config", "share.auto.offset.reset=earliest")
    sent = produce(broker, "queue", range(20))
    argv = ["consume", "queue", "--group", "g-share", "--group-protocol", "share", "--timeout-ms", "20000"]
    # Accepts the 12 it prints; the rest of what it acquired is released, not lost.
    done = kgroup(broker, *argv, "--max-messages", "12")
    assert done.stdout.split() == sent[:12] and "processed 12 message(s)" in done.stderr
    # The next member gets exactly the other 8: the 12 accepted are never delivered again.
    done = kgroup(broker, *argv, "--max-messages", "8")
    assert done.stdout.split() == sent[12:]


@pytest.mark.parametrize("argv, says", [
    (["--group", "g-fb", "--group-protocol", "share", "--from-beginning"], "share.auto.offset.reset=earliest"),
    (["--group-protocol", "consumer"], "give --group G"),
    (["--group", "g-fb", "--group-protocol", "share", "--partition", "0"], "without --no-join, --partition"),
])
def test_member_options_that_cannot_work_are_one_line_errors(broker, argv, says):
    run(broker, "topics", "create", "queue-fb")                      # exists already after the first case
    done = subprocess.run([KGROUP, "consume", "queue-fb", *argv, "--bootstrap-server", broker.bootstrap],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def test_a_member_of_the_wrong_kind_is_told_the_group_kind(broker):
    kgroup(broker, "topics", "create", "kinds", "--partitions", "1")
    produce(broker, "kinds", range(1))
    kgroup(broker, "consume", "kinds", "--group", "g-kinds", "--no-join", "--from-beginning", "--max-messages", "1")
    done = subprocess.run([KGROUP, "consume", "kinds", "--group", "g-kinds", "--group-protocol", "share",
                           "--max-messages", "1", "--bootstrap-server", broker.bootstrap],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "'g-kinds' is a classic group, not a share group" in done.stderr
    assert "--group-protocol classic" in done.stderr
