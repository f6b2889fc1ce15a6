"""inter_node_listener (issue 32 item 1): the listener and credentials of a node's own
requests to the other nodes (Kafka's inter.broker.listener.name and its login there), as
client settings by Kafka's names, and clear mistakes at start."""

from __future__ import annotations

import logging

import pytest

from kgroup.broker.cluster.peers import inter_node_peers
from kgroup.broker.config import ConfigError, load_config
from kgroup.client.security import ClientSecurity
from kgroup.storage.node_listeners import NodeListeners, publish_listeners

from .listener_tables import MTLS_LISTENER

LISTENERS = '''
[[listeners]]
name = "SECURE"
address = "127.0.0.1:9093"
protocol = "SASL_SSL"
sasl_mechanisms = ["SCRAM-SHA-256", "PLAIN"]
ssl_certfile = "server.pem"
ssl_keyfile = "server.key"
ssl_cafile = "ca.pem"
''' + MTLS_LISTENER + '''
[auth]
authorizer = true
super_users = ["User:broker"]
'''


def _load(tmp_path, top: str):
    path = tmp_path / "kgroup.toml"
    path.write_text(top + LISTENERS)
    return load_config(str(path), cluster="0=127.0.0.1:9092,1=127.0.0.1:9192", node_id=0)


def test_sasl_inter_node_listener_logs_in_with_the_nodes_own_user_and_trusts_the_listeners_ca(tmp_path):
    cfg = _load(tmp_path, 'inter_node_listener = "SECURE"\ninter_node_username = "broker"\n'
                          'inter_node_password = "s3cret"\n')
    assert cfg.inter_node_security() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "broker",
        "sasl.password": "s3cret", "ssl.ca.location": "ca.pem"}
    assert "s3cret" not in repr(cfg)


def test_ssl_inter_node_listener_presents_the_nodes_client_certificate(tmp_path):
    cfg = _load(tmp_path, 'inter_node_listener = "MTLS"\ninter_node_ssl_certfile = "node.pem"\n'
                          'inter_node_ssl_keyfile = "node.key"\ninter_node_ssl_cafile = "peers-ca.pem"\n')
    assert cfg.inter_node_security() == {"security.protocol": "SSL", "ssl.ca.location": "peers-ca.pem",
                                         "ssl.certificate.location": "node.pem", "ssl.key.location": "node.key"}


def test_unset_the_nodes_use_the_plaintext_cluster_ports(tmp_path):
    assert _load(tmp_path, "").inter_node_security() == {}


@pytest.mark.parametrize("top, says", [
    ('inter_node_listener = "NOPE"\n', "'NOPE' is none of this node's listeners (PLAINTEXT, SECURE, MTLS)"),
    ('inter_node_username = "broker"\n', "inter_node_username needs inter_node_listener"),
    ('inter_node_listener = "SECURE"\ninter_node_username = "broker"\n', "needs inter_node_username and "
                                                                         "inter_node_password"),
    ('inter_node_listener = "SECURE"\ninter_node_username = "b"\ninter_node_password = "p"\n'
     'inter_node_sasl_mechanism = "SCRAM-SHA-512"\n', "'SCRAM-SHA-512' is not enabled"),
    ('inter_node_listener = "MTLS"\ninter_node_username = "b"\n', "inter_node_username needs an inter_node_listener "
                                                                  "with protocol SASL_PLAINTEXT or SASL_SSL"),
    ('inter_node_listener = "PLAINTEXT"\ninter_node_ssl_cafile = "ca.pem"\n', "needs an inter_node_listener with "
                                                                            "protocol SSL or SASL_SSL"),
    ('inter_node_listener = "MTLS"\ninter_node_ssl_certfile = "node.pem"\n', "go together"),
])
def test_inter_node_mistakes_are_refused_at_start(tmp_path, top, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        _load(tmp_path, top)


def test_the_peers_addresses_are_the_published_ones_on_that_listener_and_a_non_super_user_is_warned(tmp_path, caplog):
    cfg = _load(tmp_path, f'data_dir = "{tmp_path / "data"}"\ninter_node_listener = "SECURE"\n'
                          'inter_node_username = "other"\ninter_node_password = "p"\n')
    publish_listeners(cfg.data_dir, 1, {"PLAINTEXT": ("PLAINTEXT", ("127.0.0.1", 9192)),
                                        "SECURE": ("SASL_SSL", ("node1.example", 9193))})
    with caplog.at_level(logging.WARNING, "kgroup.broker.peers"):
        peers = inter_node_peers(cfg, NodeListeners(cfg.data_dir, [0, 1]))
    assert peers.addresses == {1: ("node1.example", 9193)}
    assert peers.security == ClientSecurity.from_settings(cfg.inter_node_security())
    assert "User:other" in caplog.text and "super_users" in caplog.text
    caplog.clear()
    plain = _load(tmp_path, "")
    with caplog.at_level(logging.WARNING, "kgroup.broker.peers"):
        peers = inter_node_peers(plain, None)
    assert peers.addresses == {0: ("127.0.0.1", 9092), 1: ("127.0.0.1", 9192)} and peers.security is None
    assert "User:ANONYMOUS" in caplog.text
