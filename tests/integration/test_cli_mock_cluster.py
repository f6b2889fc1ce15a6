"""`kgroup` CLI and AdminClient against a real peer: librdkafka's mock cluster.

A confluent-kafka client created with ``test.mock.num.brokers=1`` starts an in-process mock
Kafka cluster on loopback; our client connects to it over the real wire protocol.

What the mock (librdkafka 2.16) does not serve, so those commands are checked here only for
a clear one-line error and again at the end against a real `kgroup serve`: CreateTopics,
DeleteTopics, CreatePartitions, ListGroups, DescribeGroups, DeleteGroups. Its LeaveGroup
v3+ reply for an unknown group omits the members array (undecodable), and it auto-creates
topics (4 partitions) on Metadata with allow_auto_topic_creation.
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from kgroup.cli.main import main  # noqa: E402
from kgroup.client.admin import EARLIEST, LATEST, AdminClient  # noqa: E402
from kgroup.client.connection import Connection  # noqa: E402
from kgroup.client.errors import KafkaConnectionError, UnsupportedApi  # noqa: E402
from kgroup.testing.ports import free_port  # noqa: E402
from kgroup.testing.process import ChildProcess  # noqa: E402
from tests.integration.waits import wait_for  # noqa: E402

pytestmark = pytest.mark.integration

KGROUP = Path(sys.executable).with_name("kgroup")


@pytest.fixture(scope="module")
def mock_cluster():
    producer = confluent_kafka.Producer(
        {"test.mock.num.brokers": 1, "bootstrap.servers": "", "log_level": 0}
    )
    broker = next(iter(producer.list_topics(timeout=5).brokers.values()))
    yield f"{broker.host}:{broker.port}"
    producer.flush(1)
    del producer


def run(capsys, bootstrap: str, *argv: str, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = main([*argv, "--bootstrap-server", bootstrap, "--request-timeout-ms", "5000"])
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(err: str) -> bool:
    lines = err.strip().splitlines()
    return (len(lines) == 1 and lines[0].startswith("kgroup: error: ") and " — " in lines[0]
            and "Traceback" not in err)


# -- connection ----------------------------------------------------------------------------


def test_connection_negotiates_and_pipelines(mock_cluster) -> None:
    host, port = mock_cluster.rsplit(":", 1)

    async def go():
        conn = await Connection.open(host, int(port))
        try:
            assert 3 in conn.broker_versions  # learned through the v0 fallback
            answers = await asyncio.gather(
                *[conn.request(3, {"topics": None}) for _ in range(10)]
            )
            assert all(a.brokers for a in answers)
            assert conn.choose_version(3) == min(13, conn.broker_versions[3][1])
            with pytest.raises(UnsupportedApi, match="ListGroups"):
                conn.choose_version(16)
        finally:
            await conn.close()
        with pytest.raises(KafkaConnectionError):
            await conn.request(3, {"topics": None})

    asyncio.run(go())


def test_admin_produce_fetch_offsets_and_group_commit(mock_cluster) -> None:
    async def go():
        async with AdminClient(mock_cluster) as admin:
            info = await admin.describe_topic("admin-t", auto_create=True)
            assert len(info.partitions) >= 1
            base = await admin.produce("admin-t", 0, [(b"k", b"v1"), (None, b"v2")])
            assert base == 0
            assert (await admin.list_offsets("admin-t", [0], EARLIEST)) == {0: 0}
            assert (await admin.list_offsets("admin-t", [0], LATEST)) == {0: 2}
            got = await admin.fetch("admin-t", 0, 1)
            assert [(r.offset, r.value) for r in got.records] == [(1, b"v2")]
            coord = await admin.find_coordinator("admin-g")
            assert coord.port > 0
            await admin.alter_group_offsets("admin-g", {("admin-t", 0): 1})
            assert await admin.list_group_offsets("admin-g", {"admin-t": [0]}) == {
                ("admin-t", 0): 1}

    asyncio.run(go())


# -- CLI -----------------------------------------------------------------------------------


def test_topics_list_and_describe(mock_cluster, capsys, monkeypatch) -> None:
    status, _, err = run(capsys, mock_cluster, "produce", "cli-topics", stdin="x\n",
                         monkeypatch=monkeypatch)
    assert status == 0, err
    status, out, _ = run(capsys, mock_cluster, "topics", "list")
    assert status == 0 and "cli-topics" in out.split()
    status, out, _ = run(capsys, mock_cluster, "topics", "describe", "cli-topics")
    assert status == 0
    assert out.startswith("Topic: cli-topics") and "Partition: 0\tLeader: 1" in out


def test_topics_describe_unknown_topic_is_one_line(mock_cluster, capsys) -> None:
    status, out, err = run(capsys, mock_cluster, "topics", "describe", "no-such-topic")
    assert status == 1 and out == ""
    assert one_line_error(err) and "does not exist" in err


def test_topics_create_on_the_mock_says_the_api_is_missing(mock_cluster, capsys) -> None:
    # The mock has no CreateTopics; against kgroup serve this creates the topic.
    status, _, err = run(capsys, mock_cluster, "topics", "create", "cli-new", "--partitions", "3")
    assert status == 1 and one_line_error(err) and "CreateTopics" in err


def test_produce_100_lines_then_consume_them_back(mock_cluster, capsys, monkeypatch) -> None:
    lines = [f"message-{i}" for i in range(100)]
    status, _, err = run(capsys, mock_cluster, "produce", "cli-data",
                         stdin="".join(line + "\n" for line in lines), monkeypatch=monkeypatch)
    assert status == 0, err
    status, out, err = run(capsys, mock_cluster, "consume", "cli-data", "--from-beginning",
                           "--max-messages", "100", "--timeout-ms", "5000")
    assert status == 0, err
    assert sorted(out.splitlines()) == sorted(lines)


def test_produce_with_keys_and_print_key(mock_cluster, capsys, monkeypatch) -> None:
    status, _, err = run(capsys, mock_cluster, "produce", "cli-keys", "--key-separator", ":",
                         "--partition", "1", stdin="a:1\nb:2\n", monkeypatch=monkeypatch)
    assert status == 0, err
    status, out, _ = run(capsys, mock_cluster, "consume", "cli-keys", "--from-beginning",
                         "--partition", "1", "--print-key", "--max-messages", "2",
                         "--timeout-ms", "5000")
    assert status == 0 and out.splitlines() == ["a\t1", "b\t2"]
    status, _, err = run(capsys, mock_cluster, "produce", "cli-keys", "--key-separator", ":",
                         stdin="no separator\n", monkeypatch=monkeypatch)
    assert status == 1 and one_line_error(err) and "line 1" in err


def test_consume_with_group_commits_and_reset_offsets(mock_cluster, capsys, monkeypatch) -> None:
    lines = "".join(f"{i}\n" for i in range(10))
    assert run(capsys, mock_cluster, "produce", "cli-grp", "--partition", "0", stdin=lines,
               monkeypatch=monkeypatch)[0] == 0
    status, out, err = run(capsys, mock_cluster, "consume", "cli-grp", "--group", "g-cli", "--no-join",
                           "--from-beginning", "--timeout-ms", "700")
    assert status == 0, err
    assert out.splitlines() == [str(i) for i in range(10)]
    # Progress was committed: the same group reads nothing new.
    status, out, _ = run(capsys, mock_cluster, "consume", "cli-grp", "--group", "g-cli", "--no-join",
                         "--from-beginning", "--timeout-ms", "500")
    assert status == 0 and out == ""
    # describe falls back to offsets only (the mock has no DescribeGroups): lag 0.
    status, out, err = run(capsys, mock_cluster, "groups", "describe", "g-cli")
    assert status == 0, err
    row = next(line.split() for line in out.splitlines() if line.startswith("g-cli "))
    assert row[:6] == ["g-cli", "cli-grp", "0", "10", "10", "0"]
    # Dry run changes nothing.
    status, out, err = run(capsys, mock_cluster, "groups", "reset-offsets", "g-cli", "--topic",
                           "cli-grp", "--to-offset", "4")
    assert status == 0 and "dry run" in err
    assert asyncio.run(_committed(mock_cluster, "g-cli", "cli-grp"))[("cli-grp", 0)] == 10
    status, out, err = run(capsys, mock_cluster, "groups", "reset-offsets", "g-cli", "--topic",
                           "cli-grp", "--to-offset", "4", "--execute")
    assert status == 0 and "committed new offsets" in err
    status, out, _ = run(capsys, mock_cluster, "consume", "cli-grp", "--group", "g-cli", "--no-join",
                         "--timeout-ms", "500")
    assert out.splitlines() == [str(i) for i in range(4, 10)]


async def _committed(bootstrap: str, group: str, topic: str):
    async with AdminClient(bootstrap) as admin:
        return await admin.list_group_offsets(group, {topic: [0]})


@pytest.mark.parametrize("argv, api", [
    (["groups", "list"], "ListGroups"),
    (["groups", "delete", "g-cli"], "DeleteGroups"),
    (["topics", "delete", "cli-doomed"], "DeleteTopics"),
])
def test_commands_the_mock_lacks_fail_in_one_line(mock_cluster, capsys, monkeypatch, argv, api) -> None:
    # The topic to delete must exist, or the CLI's own "does not exist" answers first; it is
    # this test's own (producing creates it on the mock), whatever ran before it.
    assert run(capsys, mock_cluster, "produce", "cli-doomed", stdin="x\n", monkeypatch=monkeypatch)[0] == 0
    status, _, err = run(capsys, mock_cluster, *argv)
    assert status == 1 and one_line_error(err) and api in err


def test_closed_port_gives_one_line_error_from_the_real_script() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = [str(KGROUP)] if KGROUP.exists() else [sys.executable, "-m", "kgroup.cli.main"]
    env = {k: v for k, v in os.environ.items() if k != "KGROUP_BOOTSTRAP"}
    proc = subprocess.run(
        [*exe, "topics", "list", "--bootstrap-server", f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=30, env=env,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert one_line_error(proc.stderr)
    assert f"127.0.0.1:{port}" in proc.stderr


# -- the commands the mock lacks, against `kgroup serve` -------------------------------------


@pytest.fixture(scope="module")
def kgroup_broker(tmp_path_factory):
    pytest.importorskip("kgroup.broker.server")
    port = free_port()
    data = tmp_path_factory.mktemp("kgroup-data")
    proc = ChildProcess([str(KGROUP), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data),
                         "--log-level", "WARNING"], name="kgroup serve (mock-cluster tests)").start()

    def listening() -> bool:
        if not proc.alive():
            pytest.fail(f"kgroup serve exited: {proc.log_tail(10)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False
    wait_for(listening, 60, what="kgroup serve to listen")
    yield f"127.0.0.1:{port}"
    proc.stop(10)


def test_topic_and_group_admin_against_kgroup_serve(kgroup_broker, capsys, monkeypatch) -> None:
    b = kgroup_broker
    status, out, err = run(capsys, b, "topics", "create", "srv-t", "--partitions", "3")
    assert status == 0, err
    status, _, err = run(capsys, b, "topics", "create", "srv-t")
    assert status == 1 and one_line_error(err) and "TOPIC_ALREADY_EXISTS" in err
    assert run(capsys, b, "produce", "srv-t", "--partition", "0", stdin="a\nb\nc\n",
               monkeypatch=monkeypatch)[0] == 0
    status, out, err = run(capsys, b, "consume", "srv-t", "--group", "srv-g", "--no-join",
                           "--from-beginning", "--timeout-ms", "700")
    assert status == 0 and out.splitlines() == ["a", "b", "c"], err
    status, out, _ = run(capsys, b, "groups", "list")
    assert status == 0 and "srv-g" in out
    status, out, err = run(capsys, b, "groups", "describe", "srv-g")
    assert status == 0 and "has no active members" in err
    row = next(line.split() for line in out.splitlines() if line.startswith("srv-g "))
    assert row[:6] == ["srv-g", "srv-t", "0", "3", "3", "0"]
    status, out, _ = run(capsys, b, "groups", "describe", "srv-g", "--state")
    assert status == 0 and out.splitlines()[1].split()[-2:] == ["Empty", "0"]
    status, _, err = run(capsys, b, "groups", "remove-members", "srv-g", "--instance-id", "x")
    assert status == 1 and one_line_error(err)
    status, out, _ = run(capsys, b, "groups", "delete", "srv-g")
    assert status == 0
    status, _, err = run(capsys, b, "groups", "describe", "srv-g")
    assert status == 1 and one_line_error(err) and "does not exist" in err
    status, _, err = run(capsys, b, "topics", "add-partitions", "srv-t", "--partitions", "4")
    assert status == 0, err
    status, _, err = run(capsys, b, "topics", "delete", "srv-t")
    assert status == 0, err
    status, out, _ = run(capsys, b, "topics", "list")
    assert "srv-t" not in out.split()
