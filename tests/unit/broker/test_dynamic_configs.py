"""Dynamic broker configs (broker/admin/dynamic_configs.py): Kafka's precedence and sources, its
refusals and their texts, what kgroup applies at once, and durability in the data dir."""

from __future__ import annotations

import pytest

from kgroup.broker.config import BrokerConfig
from kgroup.broker.admin.dynamic_configs import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    DynamicBrokerConfigs,
    ConfigRefused,
)

SET, DELETE, APPEND = 0, 1, 2
CLUSTER = ((0, "127.0.0.1", 19092), (1, "127.0.0.1", 19093))


def node(tmp_path, node_id: int = 0, **static) -> DynamicBrokerConfigs:
    config = BrokerConfig(data_dir=str(tmp_path), node_id=node_id, cluster=CLUSTER, **static)
    return DynamicBrokerConfigs(config, tmp_path)


def refusal(call, *args) -> tuple[int, str]:
    with pytest.raises(ConfigRefused) as refused:
        call(*args)
    return refused.value.code, refused.value.message


def shown(configs: DynamicBrokerConfigs, resource: str) -> dict:
    return {d.name: d for d in configs.describe(resource)}


def test_dynamic_broker_config_per_node_over_cluster_default_over_static_over_default(tmp_path):
    zero = node(tmp_path, log_retention_ms=7_200_000)
    assert zero.effective.log_retention_ms == 7_200_000
    described = shown(zero, "0")["log.retention.ms"]
    assert (described.value, described.source, described.read_only) == ("7200000", STATIC_BROKER_CONFIG, False)
    zero.alter("", (("log.retention.ms", SET, "3600000"), ("message.max.bytes", SET, "2000000")), True, False)
    zero.alter("0", (("message.max.bytes", SET, "3000000"),), True, False)
    assert (zero.effective.log_retention_ms, zero.effective.max_message_bytes) == (3_600_000, 3_000_000)
    assert zero.log_config.retention_ms == 3_600_000
    mmb = shown(zero, "0")["message.max.bytes"]
    assert (mmb.value, mmb.source) == ("3000000", DYNAMIC_BROKER_CONFIG)
    assert mmb.synonyms == (("message.max.bytes", "3000000", DYNAMIC_BROKER_CONFIG),
                            ("message.max.bytes", "2000000", DYNAMIC_DEFAULT_BROKER_CONFIG),
                            ("message.max.bytes", "1048588", DEFAULT_CONFIG))
    assert shown(zero, "0")["log.retention.ms"].source == DYNAMIC_DEFAULT_BROKER_CONFIG
    # The cluster default lists what is set there, as Kafka does.
    assert {n: (d.value, d.source) for n, d in shown(zero, "").items()} == {
        "log.retention.ms": ("3600000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        "message.max.bytes": ("2000000", DYNAMIC_DEFAULT_BROKER_CONFIG)}
    # Another node of the cluster, and this one after a restart, read the same data dir.
    one = node(tmp_path, 1)
    assert (one.effective.log_retention_ms, one.effective.max_message_bytes) == (3_600_000, 2_000_000)
    again = node(tmp_path, 0)
    assert again.effective.max_message_bytes == 3_000_000
    # A change through node 0 reaches node 1 when it looks again.
    zero.alter("", (("message.max.bytes", DELETE, None),), True, False)
    assert one.refresh() and one.effective.max_message_bytes == 1_048_588
    assert not one.refresh()


def test_dynamic_broker_config_refused_as_kafka_refuses_it(tmp_path):
    zero = node(tmp_path)
    assert refusal(zero.alter, "", (("num.partitions", SET, "3"), ("group.max.size", SET, "4")), True, False) == (
        42, "Cannot update these configs dynamically: [num.partitions, group.max.size]")
    assert refusal(zero.alter, "0", (("ssl.keystore.location", SET, "/x"),), True, False) == (
        42, "These security configs can be dynamically updated only per-listener using the listener prefix: "
            "[ssl.keystore.location]")
    assert refusal(zero.alter, "", (("sasl.kerberos.service.name", SET, "kafka"),), True, False) == (
        42, "Cannot update these configs at default cluster level, broker id must be specified: "
            "[sasl.kerberos.service.name]")
    assert refusal(zero.alter, "", (("message.max.bytes", SET, "abc"),), True, False) == (
        42, "Invalid value abc for configuration message.max.bytes: Not a number of type INT")
    assert refusal(zero.alter, "", (("log.retention.ms", APPEND, "1"),), True, False) == (
        40, "Config value append is not allowed for config key: log.retention.ms")
    assert refusal(zero.alter, "", (("log.retention.ms", SET, None),), True, False) == (
        42, "Null value not supported for : log.retention.ms")
    assert refusal(zero.alter, "1", (("message.max.bytes", SET, "5"),), True, False) == (
        42, "Unexpected broker id, expected 0, but received 1")
    assert refusal(zero.alter, "x", (("message.max.bytes", SET, "5"),), True, False) == (
        42, "Node id must be an integer, but it is: x")
    assert refusal(zero.describe, "1") == (42, "Unexpected broker id, expected 0 or empty string, but received 1")
    # kgroup binds its listeners at start.
    assert refusal(zero.alter, "0", (("listeners", SET, "PLAINTEXT://127.0.0.1:1"),), True, False)[0] == 42
    assert zero.effective == zero.static and not zero.file.path.exists()


def test_dynamic_broker_config_kept_validate_only_and_alter_configs_replacing(tmp_path):
    zero = node(tmp_path)
    zero.alter("", (("log.cleaner.threads", SET, "2"), ("num.io.threads", SET, "16")), True, True)
    assert zero.cluster_values == {}                                   # validate_only
    zero.alter("", (("log.cleaner.threads", SET, "2"), ("num.io.threads", SET, "16")), True, False)
    zero.alter("", (("log.cleanup.policy", APPEND, "compact"),), True, False)
    assert zero.cluster_values == {"log.cleaner.threads": "2", "num.io.threads": "16",
                                   "log.cleanup.policy": "delete,compact"}
    kept = shown(zero, "0")["num.io.threads"]                          # kept, described, changes nothing
    assert (kept.value, kept.source, kept.read_only) == ("16", DYNAMIC_DEFAULT_BROKER_CONFIG, False)
    assert kept.synonyms[-1] == ("num.io.threads", "8", DEFAULT_CONFIG)
    zero.alter("", (("message.max.bytes", SET, "2000000"),), False, False)   # AlterConfigs: replaces all
    assert zero.cluster_values == {"message.max.bytes": "2000000"}
    # Listener configs are per broker; a password is never shown.
    zero.alter("0", (("listener.name.secure.ssl.key.password", SET, "s3cret"),), True, False)
    secret = shown(zero, "0")["listener.name.secure.ssl.key.password"]
    assert (secret.value, secret.sensitive, secret.synonyms) == (None, True, (
        ("listener.name.secure.ssl.key.password", None, DYNAMIC_BROKER_CONFIG),))
    assert "s3cret" in zero.file.path.read_text() and zero.file.path.stat().st_mode & 0o077 == 0
