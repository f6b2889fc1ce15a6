"""Broker configuration: TOML file plus flags, with clear errors."""

from __future__ import annotations

import pytest

from kgroup.broker.config import ConfigError, load_config
from kgroup.core.group_configs import CONSUMER_HEARTBEAT_INTERVAL, CONSUMER_SESSION_TIMEOUT, configured_value


def test_toml_file_flags_and_per_group_overrides(tmp_path):
    path = tmp_path / "kgroup.toml"
    path.write_text(
        'listen = "127.0.0.1:9999"\nfsync = "never"\n'
        "[group]\ninitial_rebalance_delay_ms = 0\nconsumer_assignors = [\"range\", \"uniform\"]\n"
        "[group.overrides.fast]\nconsumer_session_timeout_ms = 50000\nconsumer_heartbeat_interval_ms = 10000\n"
    )
    cfg = load_config(str(path), listen="127.0.0.1:1234")
    assert (cfg.listen_host, cfg.listen_port) == ("127.0.0.1", 1234)      # the flag wins
    assert cfg.fsync == "never" and cfg.group.initial_rebalance_delay_ms == 0
    assert cfg.group.consumer_assignors == ("range", "uniform")
    assert configured_value(cfg.group, "fast", CONSUMER_SESSION_TIMEOUT) == 50_000
    assert configured_value(cfg.group, "other", CONSUMER_HEARTBEAT_INTERVAL) == 5_000


@pytest.mark.parametrize("text, message", [
    ("nonsense = 1\n", "bad.toml: unknown setting 'nonsense' in the top level; known: advertised, "),
    ("[group]\nbogus = 1\n", "bad.toml: unknown setting 'bogus' in [group]; known: consumer_assignment_interval_ms, consumer_assignors, "),
    ("listen = \"nowhere\"\n", 'bad.toml: listen = "nowhere": must look like HOST:PORT'),
    ("[group.overrides.g]\nconsumer_session_timeout_ms = 1\n", "bad.toml: [group.overrides.g] needs "),
    ("[group.overrides.g]\nconsumer_session_timeout_ms = 1000\nconsumer_heartbeat_interval_ms = 500\n",
     "group g: session timeout 1000 ms is outside the broker's bounds"),
    ("this is not toml", "config file bad.toml is not valid TOML"),
])
def test_mistakes_get_a_clear_message(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert str(err.value).replace(str(path), "bad.toml").startswith(message), err.value


def test_missing_file_says_so(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "nope.toml"))


@pytest.mark.parametrize("text, message", [
    # Wrong types are named with the key as written, not left to fail later inside the broker.
    ('max_request_bytes = "big"\n', 'max_request_bytes = "big": must be a whole number'),
    ("default_partitions = 1.5\n", "default_partitions = 1.5: must be a whole number"),
    ('auto_create_topics = "yes"\n', 'auto_create_topics = "yes": must be true or false'),
    ("fsync = 1\n", "fsync = 1: must be a string"),
    ('[group]\nmin_session_timeout_ms = "x"\n', '[group] min_session_timeout_ms = "x": must be a whole number'),
    ("[group]\ninitial_rebalance_delay_ms = true\n", "[group] initial_rebalance_delay_ms = true: must be a whole number"),
    ('[group]\nconsumer_assignors = "uniform"\n', '[group] consumer_assignors = "uniform": must be a list of names'),
    # Values out of range are refused at start with the key the user wrote (not a Kafka
    # property), not when a topic is auto-created.
    ("[group]\nmin_session_timeout_ms = -5\n", "[group] min_session_timeout_ms = -5: must be >= 1"),
    ("default_partitions = -3\n", "default_partitions = -3: must be >= 1"),
    ("metadata_partitions = 0\n", "metadata_partitions = 0: must be >= 1"),
    ("max_request_bytes = 0\n", "max_request_bytes = 0: must be >= 1"),
    ("max_request_bytes = 2147483648\n", "max_request_bytes = 2147483648: must be <= 2147483647"),
    ('listen = "127.0.0.1:70000"\n', 'listen = "127.0.0.1:70000": must look like HOST:PORT'),
    ("log_retention_ms = -5\n", "log_retention_ms = -5: must be >= -1"),
    ('fsync = "sometimes"\n', 'fsync = "sometimes": must be "always", "never" or "interval:MS"'),
    ('data_dir = ""\n', 'data_dir = "": must not be empty'),
    # Orderings between keys name the key given, and the one it must stay beside.
    ("[group]\nmax_session_timeout_ms = 5000\n", "[group] max_session_timeout_ms = 5000: must be >= "
     "min_session_timeout_ms (6000)"),
    ("[group]\nconsumer_min_session_timeout_ms = 50000\n", "[group] consumer_min_session_timeout_ms = 50000: "
     "must be <= consumer_session_timeout_ms (45000)"),
    ("[group]\nconsumer_heartbeat_interval_ms = 9000\nconsumer_session_timeout_ms = 9000\n"
     "consumer_min_session_timeout_ms = 1000\n",
     "[group] consumer_heartbeat_interval_ms = 9000: must be < consumer_session_timeout_ms (9000)"),
    # Share groups (KIP-932): bounds looser than Kafka's, but bounds.
    ("[group]\nshare_delivery_count_limit = 11\n",
     "[group] share_delivery_count_limit = 11: must be <= share_max_delivery_count_limit (10)"),
    ('[group]\nshare_auto_offset_reset = "never"\n',
     '[group] share_auto_offset_reset = "never": must be one of latest, earliest'),
    ("[group]\nshare_record_lock_duration_ms = 10\n",
     "[group] share_record_lock_duration_ms = 10: must be >= share_min_record_lock_duration_ms (1000)"),
    ("[group]\nshare_heartbeat_interval_ms = 60000\n",
     "[group] share_heartbeat_interval_ms = 60000: must be <= share_max_heartbeat_interval_ms (15000)"),
    ("[group]\nshare_heartbeat_interval_ms = 10000\nshare_session_timeout_ms = 10000\n",
     "[group] share_heartbeat_interval_ms = 10000: must be < share_session_timeout_ms (10000)"),
])
def test_wrong_types_and_ranges_are_refused_with_the_key_as_written(tmp_path, text, message):
    path = tmp_path / "kgroup.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert str(err.value) == f"{path}: {message}" or str(err.value).startswith(f"{path}: {message}"), err.value


def test_a_server_assignor_the_broker_lacks_is_named(tmp_path):
    path = tmp_path / "kgroup.toml"
    path.write_text('[group]\nconsumer_assignors = ["uniform", "nope"]\n')
    with pytest.raises(ConfigError, match="consumer_assignors: unknown server assignor 'nope'"):
        load_config(str(path))


def test_a_cluster_node_listens_on_its_own_entry_unless_told_otherwise(tmp_path):
    cfg = load_config(None, node_id=1, cluster="0=127.0.0.1:9092,1=127.0.0.1:9093,2=127.0.0.1:9094")
    assert (cfg.listen_host, cfg.listen_port) == ("127.0.0.1", 9093)
    assert cfg.advertised == ("127.0.0.1", 9093)
    assert cfg.nodes == {0: ("127.0.0.1", 9092), 1: ("127.0.0.1", 9093), 2: ("127.0.0.1", 9094)}
    wide = load_config(None, node_id=1, cluster="0=h0:9092,1=h1:9093", listen="0.0.0.0:9093")
    assert wide.listen_host == "0.0.0.0" and wide.advertised == ("h1", 9093)
    path = tmp_path / "node.toml"
    path.write_text('node_id = 0\ncluster = ["0=127.0.0.1:7000", "1=127.0.0.1:7001"]\nnode_timeout_ms = 2000\n')
    toml = load_config(str(path))
    assert toml.listen_port == 7000 and toml.node_timeout_ms == 2000
    assert load_config(None).nodes == {1: ("127.0.0.1", 9092)}   # a single broker: itself


@pytest.mark.parametrize("overrides, message", [
    ({"node_id": 5, "cluster": "0=h:1,1=h:2"}, "node_id 5 is not in the cluster list"),
    ({"node_id": 0, "cluster": "0=h:1,0=h:2"}, "names node 0 twice"),
    ({"node_id": 0, "cluster": "0=h"}, "HOST:PORT"),
    ({"node_id": 0, "cluster": "x=h:1"}, "ID=HOST:PORT"),
    ({"node_timeout_ms": 10}, "--node-timeout-ms 10: must be >= 100"),
    ({"fsync": "sometimes"}, '--fsync sometimes: must be "always", "never" or "interval:MS"'),
])
def test_cluster_mistakes_get_a_clear_message(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, **overrides)
def test_share_group_settings_in_the_group_table(tmp_path):
    path = tmp_path / "share.toml"
    path.write_text("[group]\nshare_record_lock_duration_ms = 5000\nshare_delivery_count_limit = 3\n"
                    'share_auto_offset_reset = "earliest"\nshare_session_timeout_ms = 10000\n'
                    "share_heartbeat_interval_ms = 1000\nshare_partition_max_record_locks = 500\n")
    group = load_config(str(path)).group
    assert (group.share_record_lock_duration_ms, group.share_delivery_count_limit, group.share_auto_offset_reset,
            group.share_session_timeout_ms, group.share_heartbeat_interval_ms,
            group.share_partition_max_record_locks) == (5000, 3, "earliest", 10000, 1000, 500)


def test_a_cluster_node_opens_its_cluster_entry_and_its_listeners_secured_ones_too(tmp_path):
    cluster = "0=127.0.0.1:9092,1=127.0.0.1:9093"
    path = tmp_path / "node.toml"
    path.write_text('[[listeners]]\nname = "INTERNAL"\naddress = "127.0.0.1:9193"\nprotocol = "PLAINTEXT"\n')
    cfg = load_config(str(path), node_id=1, cluster=cluster)
    # The --cluster entry is the node's PLAINTEXT listener, then its [[listeners]].
    assert [(lst.name, lst.port) for lst in cfg.listeners_to_open] == [("PLAINTEXT", 9093), ("INTERNAL", 9193)]
    assert cfg.advertised == ("127.0.0.1", 9093)
    path.write_text('[[listeners]]\nname = "SECURE"\naddress = "127.0.0.1:9194"\nprotocol = "SASL_PLAINTEXT"\n')
    cfg = load_config(str(path), node_id=1, cluster=cluster)
    assert [(lst.name, lst.protocol) for lst in cfg.listeners_to_open] == [("PLAINTEXT", "PLAINTEXT"),
                                                                           ("SECURE", "SASL_PLAINTEXT")]
    assert load_config(str(path)).listeners[0].name == "SECURE"       # a single broker: as before
