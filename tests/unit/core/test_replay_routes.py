"""Every kind of record the group-metadata log can hold has a way to be replayed: a record
kind added to a codec and forgotten by the coordinator's replay would be written, then fail
every load after it."""

from __future__ import annotations

from kgroup.core import record_codec, streams_codec
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.records import ClassicGroupRecord, GroupConfigRecord, OffsetCommitRecord, ShareStateRecord


def test_every_record_kind_of_the_codecs_has_a_replay() -> None:
    kinds = {ClassicGroupRecord, GroupConfigRecord, ShareStateRecord}
    for table in (record_codec._CONSUMER_KEY_VERSIONS, record_codec._TXN_KEY_VERSIONS,
                  record_codec._SHARE_KEY_VERSIONS, streams_codec.KEY_VERSIONS):
        kinds.update(table)
    routes = set(GroupCoordinatorShard()._replay_of)
    # A plain offset commit is replay's first branch, outside the table (the hot one).
    assert OffsetCommitRecord not in routes
    assert kinds - routes == set()
    assert routes - kinds == set()
