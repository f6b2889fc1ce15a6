"""`kgroup cluster --config` with secured listeners (issue 32, item 7): every node reads the
one file, node i at the file's listener ports + i; a client bootstrapped on node 1's
SASL_SSL listener is only ever sent to SASL_SSL addresses, produces, consumes in a group and
commits a transaction across the three nodes (their markers over the inter-node listener of
the same file); a file whose ports meet the nodes' is one line before any node starts."""

from __future__ import annotations

import signal
import subprocess

import pytest

from tests.integration.broker_process import KGROUP
from tests.integration.security_setup import ADMIN, ADMIN_PASSWORD, add_user_offline, make_certs, our_settings
from kgroup.testing.ports import free_run
from tests.integration.test_cluster_basics import _free

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MECH = "SCRAM-SHA-256"


def _config(path, secure: int, certs) -> None:
    path.write_text(f"""
inter_node_listener = "SECURE"
inter_node_username = "{ADMIN}"
inter_node_password = "{ADMIN_PASSWORD}"
inter_node_ssl_cafile = "{certs.ca}"

[group]
initial_rebalance_delay_ms = 0

[[listeners]]
name = "SECURE"
address = "127.0.0.1:{secure}"
protocol = "SASL_SSL"
sasl_mechanisms = ["{MECH}"]
ssl_certfile = "{certs.server_cert}"
ssl_keyfile = "{certs.server_key}"

[auth]
authorizer = true
super_users = ["User:{ADMIN}"]
""")


def _two_runs() -> tuple[int, int]:
    return free_run(3), free_run(3)                   # held runs never overlap


def test_kgroup_cluster_gives_each_node_its_secured_listener(tmp_path) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    certs = make_certs(tmp_path / "certs", ())
    data = tmp_path / "data"
    add_user_offline(data, ADMIN, ADMIN_PASSWORD, MECH)
    base, secure = _two_runs()
    _config(tmp_path / "cluster.toml", secure, certs)
    proc = subprocess.Popen([KGROUP, "cluster", "--nodes", "3", "--base-port", str(base), "--config",
                             str(tmp_path / "cluster.toml"), "--data-dir", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(6)]
        assert lines[1].strip() == f"node 0: 127.0.0.1:{base}, SECURE (SASL_SSL) 127.0.0.1:{secure}", lines
        addresses = [f"127.0.0.1:{secure + i}" for i in range(3)]
        assert lines[5].strip() == f"SECURE (SASL_SSL) bootstrap servers: {','.join(addresses)}", lines
        conf = {**our_settings("SASL_SSL", MECH, ADMIN, ADMIN_PASSWORD, certs), "bootstrap.servers": addresses[1]}
        conf["sasl.mechanisms"] = conf.pop("sasl.mechanism")
        admin = AdminClient(conf)
        admin.create_topics([NewTopic("secured", num_partitions=3, replication_factor=1)])["secured"].result(10)
        brokers = admin.list_topics(timeout=10).brokers
        assert sorted(f"{b.host}:{b.port}" for b in brokers.values()) == addresses

        producer = Producer({**conf, "acks": "all", "transactional.id": "cli-secured"})
        producer.init_transactions(10)
        producer.begin_transaction()
        for p in range(3):   # partition p led by node p: markers from the coordinator to all three
            producer.produce("secured", value=f"v{p}".encode(), partition=p)
        producer.commit_transaction(20)

        consumer = Consumer({**conf, "group.id": "cli-secured", "auto.offset.reset": "earliest",
                             "isolation.level": "read_committed"})
        consumer.subscribe(["secured"])
        got = []
        for _ in range(40):
            got += [m for m in consumer.consume(3, 0.5) if not m.error()]
            if len(got) >= 3:
                break
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition("secured", p) for p in range(3)], timeout=10)
        consumer.close()
        assert sorted(m.value() for m in got) == [b"v0", b"v1", b"v2"]
        assert all(tp.offset >= 1 for tp in committed), committed
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_kgroup_cluster_refuses_listener_ports_that_meet(tmp_path) -> None:
    base = free_run(3)
    certs = make_certs(tmp_path / "certs", ())
    _config(tmp_path / "clash.toml", base + 1, certs)   # node 0's SECURE port is node 1's PLAINTEXT one
    done = subprocess.run([KGROUP, "cluster", "--nodes", "3", "--base-port", str(base), "--config",
                           str(tmp_path / "clash.toml"), "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert f"port {base + 1} would be both" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert all(_free(base + i) for i in range(3))
