"""The Java, Go and Node clients and kcat over kgroup's secured listeners: SASL SCRAM-SHA-512
(SASL_PLAINTEXT), SASL PLAIN over TLS (SASL_SSL) and mutual TLS (SSL with a client
certificate). Each produces to a topic of its own and reads it back in a group, as a super
user (tests/integration/test_security.py covers the Python clients and the authorizer's rules;
this module the client libraries' SASL and TLS implementations against ours)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from kgroup.client import AdminClient
from tests.integration.security_setup import ADMIN, ADMIN_PASSWORD, SUPER_CN, our_settings, secure_broker
from tests.interop.go import go_run
from tests.interop.helpers import eventually, spread
from tests.interop.node import node, node_available
from tests.interop.toolchain import unavailable

pytestmark = pytest.mark.integration

WAYS = ["scram", "plain", "tls"]


@pytest.fixture(scope="module")
def sb(tmp_path_factory):
    broker = secure_broker(tmp_path_factory.mktemp("secure"), ())
    broker.proc.start()
    try:
        yield broker
    finally:
        broker.proc.finish()


def way_in(sb, way: str) -> tuple[str, dict]:
    """(bootstrap, our settings) of a way in: the address and Kafka's names for the settings."""
    if way == "scram":
        return sb.address(sb.sasl_port), our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)
    if way == "plain":
        return sb.address(sb.sasl_ssl_port), our_settings("SASL_SSL", "PLAIN", ADMIN, ADMIN_PASSWORD, sb.certs)
    return sb.address(sb.ssl_port), our_settings("SSL", certs=sb.certs, client_cn=SUPER_CN)


def create_topic(sb, topic: str, partitions: int = 2) -> None:
    bootstrap, settings = way_in(sb, "scram")

    async def go():
        async with AdminClient(bootstrap, config=settings) as admin:
            await admin.create_topics({topic: partitions})
    asyncio.run(go())


# ---- Java ---------------------------------------------------------------------------------------

def java_settings(sb, way: str, tmp_path) -> dict:
    bootstrap, s = way_in(sb, way)
    out = {"bootstrap.servers": bootstrap, "security.protocol": s["security.protocol"]}
    if "sasl.mechanism" in s:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if s["sasl.mechanism"] == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        out.update({"sasl.mechanism": s["sasl.mechanism"],
                    "sasl.jaas.config": f'{module} required username="{ADMIN}" password="{ADMIN_PASSWORD}";'})
    if "ssl.ca.location" in s:
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": s["ssl.ca.location"]})
    if "ssl.certificate.location" in s:
        # Kafka's PEM key store: the private key and its certificate chain in one file.
        store = tmp_path / "client-keystore.pem"
        store.write_text(open(s["ssl.key.location"]).read() + open(s["ssl.certificate.location"]).read())
        out.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(store)})
    return out


@pytest.mark.parametrize("way", WAYS)
def test_java_clients_over_secured_listeners(java, sb, name, way, tmp_path):
    topic = f"js-{way}-{name}"
    config = java_settings(sb, way, tmp_path)
    java.call("admin.new", name=f"sa-{way}", config=config)
    java.call("producer.new", name=f"sp-{way}", config={**config, "enable.idempotence": "true"})
    try:
        assert java.call("admin.createTopics", name=f"sa-{way}", topics=[{"name": topic, "partitions": 2}]) == {topic: None}
        java.call("producer.send", name=f"sp-{way}", records=spread(topic, 6, 2))
        java.consumer(f"sc-{way}", {**config, "group.id": topic, "auto.offset.reset": "earliest"}, topics=[topic],
                      commit="sync")
        assert sorted(r[4] for r in java.wait_records(f"sc-{way}", 6)) == sorted(f"v{i}" for i in range(6))
        users = java.call("admin.describeUserScramCredentials", name=f"sa-{way}")
        assert "SCRAM-SHA-512" in [m for m, _ in users[ADMIN]]
    finally:
        java.call("consumer.close", name=f"sc-{way}")
        java.call("producer.close", name=f"sp-{way}")
        java.call("admin.close", name=f"sa-{way}")


# ---- Go -----------------------------------------------------------------------------------------

def go_flags(sb, way: str) -> dict:
    bootstrap, s = way_in(sb, way)
    flags = {"brokers": bootstrap}
    if "sasl.mechanism" in s:
        flags.update(sasl=s["sasl.mechanism"], user=ADMIN, password=ADMIN_PASSWORD)
    if "ssl.ca.location" in s:
        flags["ca"] = s["ssl.ca.location"]
    if "ssl.certificate.location" in s:
        flags.update(cert=s["ssl.certificate.location"], key=s["ssl.key.location"])
    return flags


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("client", ["franz", "sarama"])
def test_go_clients_over_secured_listeners(go_build, sb, name, way, client):
    go = go_build / "interop"
    topic = f"gs-{client}-{way}-{name}"
    create_topic(sb, topic)
    flags = go_flags(sb, way)
    [produced] = [e for e in go_run(go, f"{client}-produce", topic=topic, count=6, partitions=2, **flags)
                  if e["event"] == "produced"]
    assert all(r[3] is None for r in produced["records"]), produced
    events = go_run(go, f"{client}-consume", group=topic, topic=topic, max=6, timeout=60,
                    balancer="range", **flags)
    assert sorted(r[4] for e in events if e["event"] == "records" for r in e["records"]) == sorted(
        f"v{i}" for i in range(6)), events


# ---- Node ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("way", ["scram", "plain"])
@pytest.mark.parametrize("client", ["kafkajs", "platformatic"])
def test_node_clients_over_sasl(sb, name, way, client):
    node_available()
    bootstrap, s = way_in(sb, way)
    mechanism = s["sasl.mechanism"] if client == "platformatic" else s["sasl.mechanism"].lower()
    args = {"bootstrap": bootstrap, "topic": f"ns-{client}-{way}-{name}", "group": f"ns-{client}-{way}-{name}",
            "count": 4, "produce": "idempotent",
            "sasl": {"mechanism": mechanism, "username": ADMIN, "password": ADMIN_PASSWORD}}
    if "ssl.ca.location" in s:
        args["ca"] = s["ssl.ca.location"]
    got = node(f"{client}_client.mjs", args)
    assert sorted(got["consumed"]) == sorted(f"v{i}" for i in range(4))


# ---- kcat ---------------------------------------------------------------------------------------

def kcat_options(sb, way: str) -> list[str]:
    bootstrap, s = way_in(sb, way)
    names = {"sasl.mechanism": "sasl.mechanisms"}
    return ["-b", bootstrap] + [a for k, v in s.items() for a in ("-X", f"{names.get(k, k)}={v}")] + (
        ["-X", f"sasl.username={ADMIN}", "-X", f"sasl.password={ADMIN_PASSWORD}"] if "sasl.mechanism" in s else [])


@pytest.mark.parametrize("way", WAYS)
def test_kcat_over_secured_listeners(sb, name, way):
    if shutil.which("kcat") is None:
        unavailable("kcat is not installed (Debian's kcat package)")
    topic = f"ks-{way}-{name}"
    create_topic(sb, topic)
    options = kcat_options(sb, way)
    done = subprocess.run(["kcat", "-P", *options, "-t", topic], input="a\nb\nc\nd\n", capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    read = subprocess.run(["kcat", *options, "-G", topic, "-X", "auto.offset.reset=earliest", "-c", "4", "-e",
                           "-f", "%s\n", topic], capture_output=True, text=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert sorted(read.stdout.split()) == ["a", "b", "c", "d"]


def test_java_admin_acls_and_scram_users(java, sb, name, tmp_path):
    """Admin's ACL and SCRAM credential calls as a super user on a broker with the authorizer
    on (test_java_admin.py compares them with Kafka where no authorizer runs)."""
    java.call("admin.new", name="acl-admin", config=java_settings(sb, "scram", tmp_path))
    try:
        binding = ["TOPIC", f"orders-{name}", "PREFIXED", f"User:dave-{name}", "*", "READ", "ALLOW"]
        assert java.call("admin.createAcls", name="acl-admin", acls=[binding]) == "ok"
        found = java.call("admin.describeAcls", name="acl-admin",
                          filter=["TOPIC", None, "ANY", f"User:dave-{name}", None, "ANY", "ANY"])
        assert found == [binding]
        assert java.call("admin.deleteAcls", name="acl-admin", filters=[binding]) == [binding]
        assert java.call("admin.describeAcls", name="acl-admin",
                         filter=["TOPIC", None, "ANY", f"User:dave-{name}", None, "ANY", "ANY"]) == []
        assert java.call("admin.alterUserScramCredentials", name="acl-admin",
                         upserts=[[f"dave-{name}", "SCRAM-SHA-512", 8192, "dave-pw"]]) == {f"dave-{name}": "ok"}
        users = java.call("admin.describeUserScramCredentials", name="acl-admin", users=[f"dave-{name}"])
        assert users == {f"dave-{name}": [["SCRAM-SHA-512", 8192]]}
        assert java.call("admin.alterUserScramCredentials", name="acl-admin",
                         deletions=[[f"dave-{name}", "SCRAM-SHA-512"]]) == {f"dave-{name}": "ok"}
    finally:
        java.call("admin.close", name="acl-admin")
