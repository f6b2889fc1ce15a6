"""Feature levels (KIP-584) as ApiVersions v3+ reports them and UpdateFeatures changes them
(`kafka-features describe|upgrade|downgrade|disable`), with what a level turns off."""

from __future__ import annotations

import uuid
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.observe import settled
from kgroup.conformance.scenarios.consumer_raw import hb
from kgroup.conformance.scenarios.share_raw import share_hb
from kgroup.conformance.target import Target

UPGRADE, SAFE, UNSAFE = 1, 2, 3
# Compared as both brokers report them.
COMPARED = ("group.version", "kraft.version", "metadata.version", "share.version", "streams.version",
            "transaction.version")
# Reported apart: kgroup has no eligible.leader.replicas.version (replica elections;
# divergences.py names it).
APART = ("eligible.leader.replicas.version",)


def api_versions(version: int):
    return request("ApiVersions", version, client_software_name="kgroup-conformance", client_software_version="1")


def update(version: int, *updates: tuple[str, int, int], validate_only: bool = False):
    return request("UpdateFeatures", version, timeout_ms=30_000, validate_only=validate_only, feature_updates=[
        {"feature": name, "max_version_level": level, "upgrade_type": kind, "allow_downgrade": kind != UPGRADE}
        for name, level, kind in updates])


def levels(r: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {"supported": {f.name: (int(f.min_version), int(f.max_version)) for f in r.supported_features
                          if f.name in names},
            "finalized": {f.name: (int(f.min_version_level), int(f.max_version_level)) for f in r.finalized_features
                          if f.name in names}}


def finalized(r: Any) -> dict[str, int]:
    return {f.name: int(f.max_version_level) for f in r.finalized_features}


@scenario("admin", "feature levels: ApiVersions v3+ and UpdateFeatures (KIP-584)",
          rule="ApiVersions v3+ lists the supported and finalized feature levels with an epoch (v3 leaves out "
               "features whose minimum is 0); UpdateFeatures checks every update before applying any and "
               "answers INVALID_UPDATE_VERSION for an unknown feature, a level out of range, a downgrade without "
               "a downgrade type and any metadata.version downgrade; validate_only changes nothing; below "
               "group.version 1 / share.version 1 the consumer and share group APIs answer UNSUPPORTED_VERSION; "
               "the epoch goes up on a change")
async def admin_feature_levels(t: Target) -> None:
    raw = await t.raw()
    topic, consumer, share = t.names.topic(), t.names.group("consumer"), t.names.group("share")
    await observe.create_topic(raw, topic, 1)
    for g in (consumer, share):
        await observe.coordinator(raw, g)
    for version in (3, 4):
        r = await raw.call(api_versions(version))
        t.add(f"ApiVersions v{version} features", {"error_code": r.error_code, "epoch known":
                                                   int(r.finalized_features_epoch) >= 0, **levels(r, COMPARED)})
        t.add(f"ApiVersions v{version} features of other levels", levels(r, APART))
    before = await raw.call(api_versions(4))
    original = finalized(before)
    for label, req in (
            ("an unknown feature", update(1, ("kgroup.nonsense", 1, UPGRADE), validate_only=True)),
            ("a level out of range", update(1, ("group.version", 7, UPGRADE), validate_only=True)),
            ("a downgrade without its type", update(1, ("group.version", 0, UPGRADE), validate_only=True)),
            ("a v0 downgrade", update(0, ("group.version", 0, SAFE))),
            ("metadata.version down, safe", update(1, ("metadata.version", 20, SAFE), validate_only=True)),
            ("metadata.version down, unsafe", update(1, ("metadata.version", 20, UNSAFE), validate_only=True)),
            ("one good, one bad", update(1, ("streams.version", 0, SAFE), ("kgroup.nonsense", 1, UPGRADE))),
            ("validate a downgrade", update(1, ("group.version", 0, SAFE), validate_only=True)),
            ("the same level again", update(1, ("streams.version", 1, UPGRADE))),
            ("no updates", update(2))):
        await t.ask(raw, label, req)
    after_checks = await raw.call(api_versions(4))
    t.add("nothing changed", finalized(after_checks) == original)
    # Turn the consumer and share protocols off and on again; whatever happens, the levels
    # the broker had are put back (both brokers are shared by the whole session).
    try:
        await t.ask(raw, "group.version 0, share.version 0 and transaction.version 1", update(
            2, ("group.version", 0, SAFE), ("share.version", 0, UNSAFE), ("transaction.version", 1, SAFE)))
        await settled(raw, api_versions(4), lambda r: "group.version" not in finalized(r))
        off = await raw.call(api_versions(4))
        t.add("after the downgrade", {"finalized": sorted(set(finalized(off)) & {*COMPARED, "share.version"}),
                                      "transaction.version": finalized(off).get("transaction.version"),
                                      "epoch went up": int(off.finalized_features_epoch)
                                      > int(before.finalized_features_epoch)})
        await t.ask(raw, "a consumer member", hb(consumer, str(uuid.uuid4()), 0, topics=[topic], owned=[]))
        await t.ask(raw, "describe the consumer group", request("ConsumerGroupDescribe", 1, group_ids=[consumer],
                                                               include_authorized_operations=False))
        await t.ask(raw, "a share member", share_hb(share, str(uuid.uuid4()), 0, [topic]))
    finally:
        restored = await raw.call(update(1, *((name, original[name], UPGRADE)
                                              for name in ("group.version", "share.version",
                                                           "transaction.version"))))
        await settled(raw, api_versions(4), lambda r: finalized(r) == original)
    t.add("put back", {"error_code": restored.error_code, "results": [(x.feature, x.error_code)
                                                                     for x in restored.results]})
    member = str(uuid.uuid4())
    joined = await raw.call(hb(consumer, member, 0, topics=[topic], owned=[]))
    t.add("a consumer member after", joined.error_code)
    await raw.call(hb(consumer, member, -1))


@scenario("admin", "ApiVersions v5: the cluster and node the client means (KIP-1242)",
          rule="ApiVersions v5 naming the cluster and node reached answers as v4; another cluster or node is "
               "REBOOTSTRAP_REQUIRED and one without the other INVALID_REQUEST, both with no ranges")
async def admin_api_versions_v5(t: Target) -> None:
    raw = await t.raw()
    metadata = await raw.call(request("Metadata", 12, topics=[], allow_auto_topic_creation=False))
    cluster, node = metadata.cluster_id, int(metadata.brokers[0].node_id)
    for label, cluster_id, node_id in (("neither named", None, -1), ("the ones reached", cluster, node),
                                       ("another cluster", "AAAAAAAAAAAAAAAAAAAAAA", node),
                                       ("another node", cluster, node + 100), ("the cluster alone", cluster, -1),
                                       ("the node alone", None, node)):
        r = await raw.call(request("ApiVersions", 5, client_software_name="kgroup-conformance",
                                   client_software_version="1", cluster_id=cluster_id, node_id=node_id))
        t.add(f"ApiVersions v5, {label}", {"error_code": r.error_code, "lists ranges": bool(r.api_keys),
                                           "epoch known": int(r.finalized_features_epoch) >= 0})
