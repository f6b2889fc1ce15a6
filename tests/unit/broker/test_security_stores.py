"""The credential and ACL stores in the data dir, TLS principals and per-listener addresses."""

from __future__ import annotations

import json

import pytest

from kgroup.acl_bindings import AclBinding, AclFilter, AclOperation, AclPermission, PatternType, ResourceType
from kgroup.broker.security.acl_store import AclStore
from kgroup.broker.security.credential_store import CredentialStore
from kgroup.broker.concerns import TABLES
from kgroup.broker.security.listeners import (
    brokers_on_listener,
    cluster_on_listener,
    coordinator_on_listener,
    endpoints_on_listener,
    distinguished_name,
)
from kgroup.storage.errors import CorruptDataError
from kgroup.wire import response_class
from kgroup.wire.kio_build import build, item
from kgroup.wire.scram import ScramMechanism

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def test_credentials_are_salted_never_the_password_and_shared_through_the_file(tmp_path):
    store = CredentialStore(tmp_path)
    store.set_password("alice", SHA512, "s3cret-pw", 4096)
    store.set_password("alice", SHA256, "s3cret-pw", 8192)
    text = (tmp_path / "security" / "scram-credentials.json").read_text()
    assert "s3cret-pw" not in text
    assert json.loads(text)["users"]["alice"]["SCRAM-SHA-256"]["iterations"] == 8192
    other = CredentialStore(tmp_path)
    assert other.check_plain("alice", "s3cret-pw") and not other.check_plain("alice", "nope")
    assert not other.check_plain("bob", "s3cret-pw")
    assert other.scram(SHA256, "alice").iterations == 8192
    store.alter(deletions=[("alice", SHA512)])
    assert other.refresh() and set(other.users["alice"]) == {SHA256}
    assert not other.refresh()
    store.alter(deletions=[("alice", SHA256)])
    assert other.refresh() and "alice" not in other.users


def test_a_corrupt_credentials_file_is_refused_by_name(tmp_path):
    (tmp_path / "security").mkdir()
    (tmp_path / "security" / "scram-credentials.json").write_text('{"version": 1, "users": {"a": {"SCRAM-SHA-1": {}}}}')
    with pytest.raises(CorruptDataError, match="scram-credentials.json"):
        CredentialStore(tmp_path)


def test_acls_are_added_and_removed_by_filter_and_shared(tmp_path):
    store, other = AclStore(tmp_path), AclStore(tmp_path)
    read = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:a", "*", AclOperation.READ,
                      AclPermission.ALLOW)
    deny = AclBinding(ResourceType.GROUP, "g", PatternType.PREFIXED, "User:b", "10.0.0.1", AclOperation.ALL,
                      AclPermission.DENY)
    store.add([read, deny, read])
    assert other.refresh() and other.acls.bindings == {read, deny}
    assert store.remove([AclFilter(ResourceType.TOPIC), AclFilter(principal="User:nobody")]) == [[read], []]
    assert other.refresh() and other.acls.bindings == {deny}
    (tmp_path / "security" / "acls.json").write_text('{"version": 1, "acls": [{"resource_type": "SPACESHIP"}]}')
    with pytest.raises(CorruptDataError, match="acls.json"):
        other.refresh()


def test_distinguished_names_as_rfc_2253_writes_them():
    cert = {"subject": ((("countryName", "US"),), (("organizationName", "Acme, Inc."),),
                        (("organizationalUnitName", "eng"), ("userId", "7")), (("commonName", " alice+1"),))}
    assert distinguished_name(cert) == "CN=\\ alice\\+1,OU=eng+UID=7,O=Acme\\, Inc.,C=US"


def test_each_listener_names_its_own_address():
    md_cls = response_class(3, 12)
    md = build(md_cls, brokers=(build(item(md_cls, "brokers"), node_id=1, host="10.0.0.1", port=9092),
                                build(item(md_cls, "brokers"), node_id=2, host="10.0.0.2", port=9092)))
    out = brokers_on_listener(md, {1: ("kafka.example.com", 9093), 2: ("kafka2.example.com", 9093)}, 12)
    assert [(b.host, b.port) for b in out.brokers] == [("kafka.example.com", 9093), ("kafka2.example.com", 9093)]
    fc = build(response_class(10, 3), node_id=1, host="10.0.0.1", port=9092)
    assert (coordinator_on_listener(fc, {1: ("k", 1)}, 3).host, coordinator_on_listener(fc, {1: ("k", 1)}, 3).port) \
        == ("k", 1)
    fc4_cls = response_class(10, 4)
    fc4 = build(fc4_cls, coordinators=(build(item(fc4_cls, "coordinators"), key="g", node_id=1, host="h", port=2),))
    assert coordinator_on_listener(fc4, {1: ("k", 1)}, 4).coordinators[0].host == "k"
    # Only the answers that name brokers are rewritten (Produce names none).
    assert {int(a.key) for table in TABLES for a in table if a.on_listener is not None} == {3, 10, 60, 78, 79}


def test_a_node_without_the_listener_is_left_out_as_kafka_leaves_it_out():
    """In a cluster, a node that has no listener of the request's name is not named: not in
    Metadata's brokers (a partition it leads: LISTENER_NOT_FOUND, no leader), not as a
    coordinator (COORDINATOR_NOT_AVAILABLE) — Kafka's answers for a listener a broker lacks."""
    md_cls = response_class(3, 12)
    topic_cls = item(md_cls, "topics")
    parts = tuple(build(item(topic_cls, "partitions"), partition_index=i, leader_id=i + 1) for i in range(2))
    md = build(md_cls, brokers=tuple(build(item(md_cls, "brokers"), node_id=n, host="10.0.0.1", port=9092)
                                     for n in (1, 2)),
               topics=(build(topic_cls, name="t", partitions=parts),))
    out = brokers_on_listener(md, {1: ("k", 9093)}, 12)
    assert [(b.node_id, b.host, b.port) for b in out.brokers] == [(1, "k", 9093)]
    assert [(p.leader_id, p.error_code) for p in out.topics[0].partitions] == [(1, 0), (-1, 72)]
    assert brokers_on_listener(md, {1: ("k", 9093)}, 5).topics[0].partitions[1].error_code == 5
    fc4_cls = response_class(10, 4)
    fc4 = build(fc4_cls, coordinators=(build(item(fc4_cls, "coordinators"), key="g", node_id=2, host="h", port=2),))
    gone = coordinator_on_listener(fc4, {1: ("k", 1)}, 4).coordinators[0]
    assert (gone.error_code, gone.node_id, gone.host, gone.port) == (15, -1, "", -1)
    dc_cls = response_class(60, 0)
    dc = build(dc_cls, brokers=tuple(build(item(dc_cls, "brokers"), broker_id=n, host="h", port=1) for n in (1, 2)))
    assert [(b.broker_id, b.port) for b in cluster_on_listener(dc, {2: ("k", 7)}, 0).brokers] == [(2, 7)]
    sf_cls = response_class(78, 1)
    sf = build(sf_cls, node_endpoints=tuple(build(item(sf_cls, "node_endpoints"), node_id=n, host="h", port=1)
                                            for n in (1, 2)))
    assert [(e.node_id, e.host, e.port) for e in endpoints_on_listener(sf, {2: ("k", 7)}, 1).node_endpoints] \
        == [(2, "k", 7)]
