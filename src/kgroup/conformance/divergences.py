"""The divergences from Kafka 4.4 that remain, each explained — and nothing else.

A scenario listed here still runs on both brokers: the transcript entries named in `labels`
must differ (otherwise the divergence is gone and its entry must be removed) and every other
entry must agree. `kind` says why it remains:

- "fixed by #25": one of issue 25's items, fixed on its branches (i25a, i25b), not here;
- "open: issue N": a feature of a later issue (29: Kafka 4.3/4.4 protocol and config
  parity; 30: operator APIs; 31: streams groups);
- "single host": what a one-node broker cannot do as a cluster does;
- "kio": what the codec library kgroup uses (kio 0.6.5) cannot express;
- "kafka defect": a failure of Kafka's own that kgroup does not copy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Divergence:
    kind: str
    what: str
    why: str
    labels: tuple[str, ...]          # transcript entries (label prefixes) that differ


SCENARIO_DIVERGENCES: dict[str, Divergence] = {
    "admin_topic_config_names": Divergence(
        "single host",
        "CreateTopics v5+ describes min.insync.replicas with source DYNAMIC_DEFAULT_BROKER_CONFIG (3) on Kafka "
        "4.4, which keeps a cluster-level value of it for eligible leader replicas (KIP-966, "
        "eligible.leader.replicas.version 1); kgroup reports its built-in default (DEFAULT_CONFIG, 5).",
        "eligible leader replicas are about replica elections, which a single host has none of; every other "
        "topic config of Kafka 4.4 (those 4.3/4.4 added included) agrees.",
        ("configs",)),
    "consumer_rejoin_as_departed_static_member": Divergence(
        "kafka defect",
        "A live member rejoining (epoch 0) under the instance id of a static member that left for a while "
        "(-2): Kafka 4.4 copies the static member onto A's id without a new group epoch, so A's own target "
        "partitions (0, 1) fall out of every target and the group ends Stable with them assigned to no one; "
        "kgroup bumps the group epoch (A's previous self left) and A gets every partition.",
        "a Stable group assigns every subscribed partition (tests/unit/core/test_consumer_properties.py); "
        "Kafka's replaceMember overwrites the live member's target with the static member's and nothing "
        "recomputes it until another epoch bump.",
        ("A rejoins as i-1", "describe", "A heartbeat", "what A owns")),
}
