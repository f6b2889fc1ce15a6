"""OffsetCommit's answer shaped as Kafka 4.4 shapes it (broker/groups/group_api.py)."""

from kgroup.broker.groups.group_api import commit_answer_topics
from kgroup.core.errors import ErrorCode as E
from kgroup.wire import request_class, response_class
from kgroup.wire.kio_build import build, item


def test_a_topic_that_exists_and_names_no_partition_is_left_out_one_that_does_not_is_answered_empty():
    tcls = item(request_class(8, 9), "topics")
    pcls = item(tcls, "partitions")
    asked = (build(tcls, name="t", partitions=(build(pcls, partition_index=0, committed_offset=1,
                                                       committed_leader_epoch=-1, committed_metadata=""),)),
             build(tcls, name="known", partitions=()), build(tcls, name="ghost", partitions=()),
             build(tcls, name="t", partitions=()))
    out = commit_answer_topics(response_class(8, 9), [(t, t.name) for t in asked], {("t", 0): E.NONE},
                               {"t": ("id", 1), "known": ("id", 1)})
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in out] == [("t", [0]), ("ghost", [])]
