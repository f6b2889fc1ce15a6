"""`kgroup groups watch` in a real terminal (tmux: send-keys to type, capture-pane to read the
screen) against a real broker and real kafka-python consumers: the view shows the group's
member and lag, then the lag growing, then a second member joining and the partitions
split, with the rebalance in its history; `q` quits with status 0 and gives the screen back."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import ConsumerThread, create_topic, wait_for
from tests.integration.waits import until

pytestmark = pytest.mark.integration

TMUX = shutil.which("tmux")
KGROUP = str(Path(sys.executable).with_name("kgroup"))


class Tmux:
    """One terminal in a tmux server of its own (`-L`): a session killed elsewhere, or the last
    session of a shared server ending (tmux then exits while the next new-session may be
    connecting: "server exited unexpectedly"), cannot touch it."""

    def __init__(self, name: str, command: str) -> None:
        assert TMUX, "tmux is needed (make test installs Debian's tmux)"
        self.name = name
        self.tmux = [TMUX, "-L", f"kgroup-test-{os.getpid()}-{name}"]
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)
        subprocess.run([*self.tmux, "new-session", "-d", "-s", name, "-x", "140", "-y", "40", command], check=True)

    def screen(self) -> str:
        out = subprocess.run([*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return out.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def wait(self, condition, what: str, timeout: float = 40.0) -> str:
        last = {"screen": ""}

        def shown() -> str | None:
            last["screen"] = self.screen()
            return last["screen"] if condition(last["screen"]) else None
        try:
            return until(shown, timeout, 0.2, what)
        except AssertionError:
            raise AssertionError(f"timed out waiting for {what}; the screen:\n{last['screen']}") from None

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def rows(screen: str, first: str) -> list[list[str]]:
    return [line.split() for line in screen.splitlines() if line.split()[:1] == [first]]


def test_watch_shows_members_and_lag_changing_as_a_consumer_joins_and_quits_on_q(tmp_path):
    from confluent_kafka import Producer

    broker = BrokerProcess(tmp_path / "data").start()
    term = None
    consumers: list[ConsumerThread] = []
    try:
        create_topic(broker.bootstrap, "watched", 2)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10):
            producer.produce("watched", b"x", partition=i % 2)
        producer.flush(10)
        alpha = ConsumerThread("kafka-python", broker.bootstrap, "watched-g", "watched", "alpha")
        consumers.append(alpha)
        alpha.start()
        wait_for(lambda: len(alpha.tally.consumed) == 10, 40, what="alpha read everything")
        alpha.commit_now()

        status = tmp_path / "status"
        term = Tmux(f"kgroup-watch-{tmp_path.name}"[:60],
                    f"{KGROUP} groups watch watched-g --bootstrap-server {broker.bootstrap} --interval-ms 300; "
                    f"echo $? > {status}; sleep 60")
        screen = term.wait(lambda s: "MEMBERS 1" in s and "LAG 0" in s, "one member, no lag")
        assert "GENERATION" in screen and "STATE Stable" in screen
        assert [r[2] for r in rows(screen, "watched")] == ["alpha", "alpha"]       # owner of both partitions

        for _ in range(5):                                  # read by alpha, not committed: lag 5
            producer.produce("watched", b"y", partition=0)
        producer.flush(10)
        screen = term.wait(lambda s: "LAG 5" in s, "the lag to grow")
        assert ["watched", "0", "alpha", "5", "10", "5"] in rows(screen, "watched")

        beta = ConsumerThread("kafka-python", broker.bootstrap, "watched-g", "watched", "beta")
        consumers.append(beta)
        beta.start()
        # The history is read from __kgroup_events while the members come from DescribeGroups:
        # the rebalance's completion may show one refresh after its new owners.
        two_member_rebalance = re.compile(r"^\S+\s+\d+\s+member joined\s+\S+ m?s\s+2\s+\d+$", re.M)
        screen = term.wait(lambda s: "MEMBERS 2" in s and {"alpha", "beta"} <= {r[2] for r in rows(s, "watched")}
                           and "LAST REBALANCES (from __kgroup_events)" in s
                           and two_member_rebalance.search(s.split("LAST REBALANCES")[1]) is not None,
                           "beta to join and own a partition, and the rebalance in the history")
        clients = {line.split()[1] for line in screen.splitlines() if line.startswith(("alpha-", "beta-"))}
        assert clients == {"alpha", "beta"}

        term.keys("q")
        wait_for(lambda: status.exists() and status.read_text().strip() != "", 20, what="watch to exit")
        assert status.read_text().strip() == "0"
        screen = term.screen()
        assert "STATE" not in screen                        # the alternate screen was left
        for c in consumers:
            assert c.tally.error is None
    finally:
        if term is not None:
            term.close()
        for c in consumers:
            c.stop(commit=False)
        broker.finish()


def test_watch_shows_what_the_wire_protocol_tells_on_another_broker(tmp_path):
    """librdkafka's mock cluster: no DescribeGroups and no __kgroup_events, but committed
    offsets and log ends, hence lag; the view says what it cannot show."""
    from confluent_kafka import Consumer, TopicPartition

    from tests.integration.clients import mock_cluster_with_topic

    holder, bootstrap, topic, partitions = mock_cluster_with_topic(20)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mock-g", "enable.auto.commit": False})
    term = None
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, 2) for p in range(partitions)], asynchronous=False)
        status = tmp_path / "status"
        term = Tmux(f"kgroup-watch-mock-{tmp_path.name}"[:60],
                    f"{KGROUP} groups watch mock-g --bootstrap-server {bootstrap} --interval-ms 300; "
                    f"echo $? > {status}; sleep 60")
        screen = term.wait(lambda s: "not available" in s and topic in s, "offsets and lag on the mock")
        assert "does not describe groups" in screen
        lags = {int(r[1]): r for r in rows(screen, topic)}
        assert sorted(lags) == list(range(partitions))
        assert sum(int(r[-1]) for r in lags.values()) == 20 - 2 * partitions        # log end - committed
        assert "LAST REBALANCES: not available (the broker has no __kgroup_events topic)" in screen
        term.keys("C-c")
        wait_for(lambda: status.exists() and status.read_text().strip() != "", 20, what="watch to exit")
        assert status.read_text().strip() == "0"
    finally:
        if term is not None:
            term.close()
        consumer.close()
        del holder
