"""Feature levels (KIP-584): what ApiVersions v3+ reports and UpdateFeatures changes.

How this works. `FEATURES` is the table of the features kgroup knows, each with the levels it
implements (ApiVersions' SupportedFeatures) and the level a new data dir starts at (what a
new Kafka 4.4 cluster finalizes, where kgroup implements it). The finalized levels (a level
0 is not listed, as Kafka lists none) and their epoch live in one document in the data dir
(`configs/features.json`, a SharedJsonFile shared by every node of a cluster, re-read when it
changed, as dynamic broker configs are), so `kafka-features upgrade|downgrade|disable`
through any node is in force on every node and after a restart. The epoch goes up by one on
each change that moves a level (clients notice a change by it: the Java producer reads
transaction.version only from a newer epoch).

What a level does: group.version 1 turns the consumer protocol's APIs on, share.version 1
the share-group APIs, streams.version 1 the streams-group APIs (`GATES`): below it they
answer UNSUPPORTED_VERSION, as Kafka 4.4 does, and stay advertised in ApiVersions as Kafka
keeps them. metadata.version and kraft.version are reported as a single Kafka 4.4 node with
a static controller quorum reports them (33, "4.4-IV2"; kraft.version 0, not listed) and
change nothing in kgroup. transaction.version 2 (KIP-890 part 2: Produce adding partitions,
an epoch bump per EndTxn) is what clients read: the Java producer uses it only when it is
finalized at 2, so `kafka-features downgrade --feature transaction.version=1` turns it off
for new producers (the broker serves both, as Kafka's does). share.version 2 is Kafka 4.4's
level with the share-group dead-letter queue (KIP-1191, broker/share/dead_letters.py), which
kgroup serves at either level. Levels kgroup does not implement are not offered:
eligible.leader.replicas.version is about replica elections, which a single host has none of.

UpdateFeatures follows Kafka 4.4's controller (its answers were asked of the reference
broker): every update is checked before any applies, and one bad update fails the request
with INVALID_UPDATE_VERSION and Kafka's text ("The update failed for all features since the
following feature had an error: ..."); a level below the current one needs the safe or
unsafe downgrade type (v0's AllowDowngrade is not taken as one: Kafka 4.4 does not either);
metadata.version is never downgraded; validate_only checks and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kgroup.storage.errors import CorruptDataError
from kgroup.storage.shared_file import SharedJsonFile
from kgroup.wire.api_keys import ApiKey

log = logging.getLogger("kgroup.broker.features")

FEATURES_FILE = Path("configs") / "features.json"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
METADATA_VERSION = "metadata.version"


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_version: int      # the levels kgroup implements (ApiVersions' SupportedFeatures)
    max_version: int
    default: int          # the level a new data dir starts at


FEATURES: tuple[Feature, ...] = (
    Feature("group.version", 0, 1, 1),
    Feature("kraft.version", 0, 1, 0),
    Feature(METADATA_VERSION, 7, 33, 33),
    Feature("share.version", 0, 2, 2),
    Feature("streams.version", 0, 1, 1),
    Feature("transaction.version", 0, 2, 2),
)
BY_NAME: Mapping[str, Feature] = {f.name: f for f in FEATURES}
DEFAULT_LEVELS: Mapping[str, int] = {f.name: f.default for f in FEATURES}

# APIs a feature level turns on: (feature, lowest level). Below it Kafka 4.4 answers them
# UNSUPPORTED_VERSION (KafkaApis' isConsumerGroupProtocolEnabled and its share and streams
# twins) while ApiVersions still lists them.
_SHARE = ("share.version", 1)
_STREAMS = ("streams.version", 1)
GATES: Mapping[ApiKey, tuple[str, int]] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ("group.version", 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ("group.version", 1),
    ApiKey.SHARE_GROUP_HEARTBEAT: _SHARE,
    ApiKey.SHARE_GROUP_DESCRIBE: _SHARE,
    ApiKey.SHARE_FETCH: _SHARE,
    ApiKey.SHARE_ACKNOWLEDGE: _SHARE,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _SHARE,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: _SHARE,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: _SHARE,
    ApiKey.STREAMS_GROUP_HEARTBEAT: _STREAMS,
    ApiKey.STREAMS_GROUP_DESCRIBE: _STREAMS,
}


class UpdateRefused(Exception):
    """An UpdateFeatures request that changes nothing: Kafka's message for the whole request."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"The update failed for all features since the following feature had an error: {reason}")


def planned(levels: Mapping[str, int], updates: Iterable[tuple[str, int, int]], node_id: int) -> dict[str, int]:
    """The levels after `updates` ((feature, level, upgrade type) each), or UpdateRefused
    naming the first update that may not be made."""
    after = dict(levels)
    for name, level, upgrade_type in updates:
        feature = BY_NAME.get(name)
        invalid = f"Invalid update version {level} for feature {name}."
        if feature is None:
            # (Disabling one is refused in other words than setting a level of it.)
            raise UpdateRefused(f"{invalid} Feature {name} not found." if level <= 0 else
                                f"{invalid} Local controller {node_id} does not support this feature.")
        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            raise UpdateRefused(f"{invalid} Unknown upgrade type {upgrade_type}.")
        if not (feature.min_version <= level <= feature.max_version or (level == 0 and feature.min_version == 0)):
            raise UpdateRefused(f"{invalid} Local controller {node_id} only supports versions "
                                f"{feature.min_version}-{feature.max_version}")
        current = levels.get(name, 0)
        if level < current:
            if upgrade_type == UPGRADE:
                raise UpdateRefused(f"{invalid} Can't downgrade the version of this feature without setting the "
                                    "upgrade type to either safe or unsafe downgrade.")
            if name == METADATA_VERSION:
                why = ("Refusing to perform the requested downgrade because it might delete metadata information."
                       if upgrade_type == SAFE_DOWNGRADE else "Unsafe metadata downgrade is not supported in this "
                                                              "version.")
                raise UpdateRefused(f"Unsupported metadata.version downgrade from {current} to {level}. {why}")
        after[name] = level
    return after


class FeatureLevels:
    """The finalized levels of this broker (of the cluster, in a cluster): read by
    ApiVersions and the gates, changed by UpdateFeatures (see the module comment)."""

    def __init__(self, data_dir: str | Path, node_id: int) -> None:
        self.node_id = node_id
        self.file = SharedJsonFile(Path(data_dir) / FEATURES_FILE)
        self.levels: dict[str, int] = dict(DEFAULT_LEVELS)
        self.epoch = 0
        self._load(self.file.read())

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def enabled(self, key: int) -> bool:
        """Whether API `key` is on (always, unless a feature level gates it)."""
        gate = GATES.get(key)  # type: ignore[call-overload]
        return gate is None or self.level(gate[0]) >= gate[1]

    @property
    def supported(self) -> tuple[tuple[str, int, int], ...]:
        return tuple((f.name, f.min_version, f.max_version) for f in FEATURES)

    @property
    def finalized(self) -> tuple[tuple[str, int], ...]:
        """(name, level) of every feature finalized above 0 (a level 0 is not listed)."""
        return tuple((f.name, self.levels[f.name]) for f in FEATURES if self.levels.get(f.name, 0) > 0)

    def refresh(self) -> bool:
        """Re-read the document if another node (or this one) changed it; True if it did."""
        if not self.file.changed():
            return False
        self._load(self.file.read())
        return True

    def update(self, updates: Iterable[tuple[str, int, int]], *, validate_only: bool = False) -> None:
        """Apply `updates` ((feature, level, upgrade type) each) all or none; UpdateRefused
        says why none. Durable before it returns."""
        updates = tuple(updates)
        if validate_only:
            planned(self.levels, updates, self.node_id)
            return
        with self.file.changing() as doc:
            self._load(doc)              # what another node may have changed meanwhile
            after = planned(self.levels, updates, self.node_id)
            if after == self.levels:
                return
            doc.clear()
            doc.update({"version": 1, "epoch": self.epoch + 1, "levels": after})
        log.info("feature levels changed (epoch %d): %s", self.epoch + 1,
                 ", ".join(f"{name}={level}" for name, level in sorted(after.items()) if after[name] != self.levels.get(name)))
        self.levels, self.epoch = after, self.epoch + 1

    def _load(self, doc: dict) -> None:
        if not doc:
            return                       # a new data dir: the defaults, epoch 0
        try:
            if doc.get("version") != 1:
                raise ValueError(f"unknown version {doc.get('version')!r}")
            levels = {str(name): int(level) for name, level in dict(doc["levels"]).items()}
            epoch = int(doc["epoch"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptDataError(f"{self.file.path}: unreadable feature levels: {exc}") from None
        self.levels, self.epoch = {**{name: 0 for name in DEFAULT_LEVELS}, **levels}, epoch
