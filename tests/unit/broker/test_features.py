"""Feature levels (broker/admin/features.py): the levels a new data dir starts at, UpdateFeatures'
checks in Kafka 4.4's words, durability, the gates, and ApiVersions v3/v4's feature fields."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kgroup.broker.admin.features import (
    DEFAULT_LEVELS,
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    FeatureLevels,
    UpdateRefused,
    planned,
)
from kgroup.broker.admin.features_api import FeaturesApi
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.api_versions import api_versions_response
from kgroup.wire.codec import decode_response, encode_response, request_class
from kgroup.wire.kio_build import build

PREFIX = "The update failed for all features since the following feature had an error: "


def test_a_new_data_dir_finalizes_what_kgroup_implements(tmp_path):
    levels = FeatureLevels(tmp_path, 1)
    assert levels.epoch == 0
    assert dict(levels.finalized) == {"group.version": 1, "metadata.version": 33, "share.version": 2,
                                      "streams.version": 1, "transaction.version": 2}
    assert ("kraft.version", 0, 1) in levels.supported      # supported, finalized at 0: not listed


@pytest.mark.parametrize(("update", "reason"), [
    (("kgroup.nonsense", 1, UPGRADE),
     "Invalid update version 1 for feature kgroup.nonsense. Local controller 3 does not support this feature."),
    (("kgroup.nonsense", 0, SAFE_DOWNGRADE),
     "Invalid update version 0 for feature kgroup.nonsense. Feature kgroup.nonsense not found."),
    (("share.version", 5, UPGRADE),
     "Invalid update version 5 for feature share.version. Local controller 3 only supports versions 0-2"),
    (("metadata.version", 40, UPGRADE),
     "Invalid update version 40 for feature metadata.version. Local controller 3 only supports versions 7-33"),
    (("group.version", 0, UPGRADE),
     "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without "
     "setting the upgrade type to either safe or unsafe downgrade."),
    (("metadata.version", 20, SAFE_DOWNGRADE),
     "Unsupported metadata.version downgrade from 33 to 20. Refusing to perform the requested downgrade because "
     "it might delete metadata information."),
    (("metadata.version", 20, UNSAFE_DOWNGRADE),
     "Unsupported metadata.version downgrade from 33 to 20. Unsafe metadata downgrade is not supported in this "
     "version."),
])
def test_updates_are_refused_in_kafkas_words(update, reason):
    with pytest.raises(UpdateRefused) as refused:
        planned(DEFAULT_LEVELS, [update], node_id=3)
    assert str(refused.value) == PREFIX + reason


def test_one_bad_update_refuses_them_all_and_a_good_plan_moves_only_what_it_names():
    with pytest.raises(UpdateRefused):
        planned(DEFAULT_LEVELS, [("group.version", 0, SAFE_DOWNGRADE), ("share.version", 9, UPGRADE)], 1)
    after = planned(DEFAULT_LEVELS, [("group.version", 0, SAFE_DOWNGRADE), ("kraft.version", 1, UPGRADE)], 1)
    assert after == {**DEFAULT_LEVELS, "group.version": 0, "kraft.version": 1}
    assert planned(DEFAULT_LEVELS, [("share.version", 2, UPGRADE)], 1) == DEFAULT_LEVELS   # the same level: fine


def test_changes_are_durable_shared_and_move_the_epoch(tmp_path):
    levels = FeatureLevels(tmp_path, 1)
    levels.update([("share.version", 0, UNSAFE_DOWNGRADE)], validate_only=True)
    assert levels.level("share.version") == 2 and levels.epoch == 0
    levels.update([("share.version", 0, UNSAFE_DOWNGRADE)])
    assert levels.level("share.version") == 0 and levels.epoch == 1
    assert "share.version" not in dict(levels.finalized)
    levels.update([("share.version", 0, UNSAFE_DOWNGRADE)])               # no change: same epoch
    assert levels.epoch == 1
    other = FeatureLevels(tmp_path, 2)                                      # a restart, or another node
    assert other.level("share.version") == 0 and other.epoch == 1
    other.update([("share.version", 1, UPGRADE)])
    assert levels.refresh() and levels.level("share.version") == 1 and levels.epoch == 2


def test_a_level_below_a_gate_turns_its_apis_off(tmp_path):
    levels = FeatureLevels(tmp_path, 1)
    assert levels.enabled(ApiKey.CONSUMER_GROUP_HEARTBEAT) and levels.enabled(ApiKey.JOIN_GROUP)
    levels.update([("group.version", 0, SAFE_DOWNGRADE), ("streams.version", 0, SAFE_DOWNGRADE)])
    assert not levels.enabled(ApiKey.CONSUMER_GROUP_HEARTBEAT) and not levels.enabled(ApiKey.CONSUMER_GROUP_DESCRIBE)
    assert not levels.enabled(ApiKey.STREAMS_GROUP_HEARTBEAT)
    assert levels.enabled(ApiKey.SHARE_FETCH) and levels.enabled(ApiKey.JOIN_GROUP)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_update_features_answers_each_version_as_kafka(tmp_path, version):
    api = FeaturesApi(FeatureLevels(tmp_path, 1))
    header = SimpleNamespace(api_key=ApiKey.UPDATE_FEATURES, api_version=version)
    req = build(request_class(ApiKey.UPDATE_FEATURES, version), timeout=30_000, feature_updates=(
        build(request_class(ApiKey.UPDATE_FEATURES, version).__dataclass_fields__["feature_updates"].type.__args__[0],
              feature="group.version", max_version_level=1, upgrade_type=UPGRADE, allow_downgrade=False),))
    answer = asyncio.run(api.update_features(header, req))
    assert int(answer.error_code) == 0 and answer.error_message is None
    if version < 2:
        assert [(r.feature, int(r.error_code), r.error_message) for r in answer.results] == [
            ("group.version", 0, "NONE")]
    else:
        assert not hasattr(answer, "results")


def test_api_versions_v3_leaves_out_features_whose_minimum_is_0(tmp_path):
    levels = FeatureLevels(tmp_path, 1)
    v3 = api_versions_response(3, ranges=(), features=levels)
    v4 = api_versions_response(4, ranges=(), features=levels)
    assert [f.name for f in v3.supported_features] == ["metadata.version"]
    assert {f.name for f in v4.supported_features} == {name for name, _, _ in levels.supported}
    for r in (v3, v4):
        assert int(r.finalized_features_epoch) == 0
        assert {f.name: (int(f.min_version_level), int(f.max_version_level)) for f in r.finalized_features} == {
            name: (level, level) for name, level in levels.finalized}
    header = SimpleNamespace(api_key=18, api_version=4, correlation_id=7)
    assert decode_response(18, 4, encode_response(header, v4)[4:]) is not None
    # Without feature levels (ApiVersions before v3, or a caller without them): none listed.
    assert int(api_versions_response(4, ranges=()).finalized_features_epoch) == -1
