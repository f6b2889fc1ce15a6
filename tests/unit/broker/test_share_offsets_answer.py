"""AlterShareGroupOffsets' answer shaped as Kafka 4.4 shapes it (broker/share/share_group_api.py)."""

import uuid

from kgroup.broker.share.share_group_api import alter_answer_topics
from kgroup.error_codes import ErrorCode as E
from kgroup.wire import request_class, response_class
from kgroup.wire.kio_build import build, item

ALTER_SHARE_GROUP_OFFSETS = 91


def test_a_topic_named_twice_is_answered_once_and_one_naming_no_partition_not_at_all():
    tcls = item(request_class(ALTER_SHARE_GROUP_OFFSETS, 0), "topics")
    pcls = item(tcls, "partitions")

    def topic(name, *parts):
        return build(tcls, topic_name=name, partitions=tuple(build(pcls, partition_index=p, start_offset=0)
                                                             for p in parts))

    tid = str(uuid.uuid4())
    out = alter_answer_topics(response_class(ALTER_SHARE_GROUP_OFFSETS, 0),
                              (topic("t", 0), topic("t", 5), topic("empty")), {("t", 5): E.UNKNOWN_TOPIC_OR_PARTITION},
                              {"t": tid}, E.NONE)
    assert [(t.topic_name, [(p.partition_index, p.error_code, bool(p.error_message)) for p in t.partitions])
            for t in out] == [("t", [(0, E.NONE, False), (5, E.UNKNOWN_TOPIC_OR_PARTITION, True)])]


def test_describing_offsets_fails_on_a_topic_that_exists_named_with_no_or_a_negative_partition():
    from kgroup.broker.share.share_group_api import state_read_refuses

    tcls = item(request_class(90, 0), "groups")
    topic_cls = item(tcls, "topics")

    def topics(*named):
        return tuple(build(topic_cls, topic_name=n, partitions=ps) for n, ps in named)

    ids = {"t": str(uuid.uuid4())}
    assert state_read_refuses(topics(("t", (0, -1))), ids)
    assert state_read_refuses(topics(("t", ())), ids)
    assert not state_read_refuses(topics(("t", (0, 2)), ("ghost", (-1,)), ("ghost2", ())), ids)
