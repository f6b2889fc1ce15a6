"""Streams group error answers carry what Kafka 4.4's do (found by the differential wire checks)."""

from kgroup.broker.streams.streams_group_api import refused_lag
from kgroup.core.streams_messages import DescribedStreamsGroup
from kgroup.error_codes import ErrorCode


def test_a_refused_heartbeat_has_the_lag_of_kafkas_schema_default():
    # v0's int32 acceptable recovery lag has no default (0); v1's int64 defaults to -1.
    assert refused_lag(0) == 0
    assert refused_lag(1) == -1


def test_a_group_not_described_has_epochs_zero():
    d = DescribedStreamsGroup("g", ErrorCode.GROUP_ID_NOT_FOUND, "Group g not found.")
    assert (d.epoch, d.target_epoch) == (0, 0)
