"""Topics by id in OffsetCommit and OffsetFetch v10 (KIP-848; broker/groups/topic_ids.py):
ids become names on the way in, names ids on the way out, an id no topic has is
UNKNOWN_TOPIC_ID -- as Kafka 4.4 answers (tests/reference/test_differential_scenarios.py,
offsets_topic_ids)."""

import uuid

from kgroup.broker.groups.group_api import commit_answer_topics
from kgroup.broker.groups.topic_ids import OffsetTopicIds, request_names, topic_key, topic_names
from kgroup.core.errors import ErrorCode as E
from kgroup.wire import request_class, response_class
from kgroup.wire.kio_build import build, item

T_ID, U_ID, GONE = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
IMAGE = {"t": (str(T_ID), 2), "u": (str(U_ID), 1)}


def commit_topic(version: int, partitions: tuple[int, ...], **name_or_id):
    tcls = item(request_class(8, version), "topics")
    pcls = item(tcls, "partitions")
    return build(tcls, **name_or_id, partitions=tuple(
        build(pcls, partition_index=p, committed_offset=1, committed_leader_epoch=-1, committed_metadata="")
        for p in partitions))


def test_ids_and_names_both_ways():
    names = OffsetTopicIds(IMAGE)
    assert names.name_of(T_ID) == "t" and names.name_of(U_ID) == "u"
    assert names.id_of("t") == T_ID and names.id_of("nope") is None
    assert names.name_of(GONE) is None
    assert names.name_of(None) is None          # the zero id, as kio reads it


def test_a_shard_not_served_here_knows_no_topics_and_each_id_stands_for_itself():
    names = OffsetTopicIds(None)
    assert names.name_of(GONE) == str(GONE)
    assert names.name_of(None) == str(uuid.UUID(int=0))


def test_the_mapping_is_built_once_per_image_and_again_for_a_replaced_one():
    a, b = dict(IMAGE), dict(IMAGE)          # two shards' images
    first, second = topic_names(a), topic_names(b)
    assert topic_names(a) is first and topic_names(b) is second and first is not second
    replaced = {**IMAGE, "v": (str(uuid.uuid4()), 1)}
    assert topic_names(replaced).id_of("v") is not None


def test_before_v10_a_request_topic_is_its_name_from_v10_its_ids_topic():
    old = [commit_topic(9, (0,), name="t"), commit_topic(9, (0,), name="ghost")]
    assert [n for _, n in request_names(old, 9, IMAGE)] == ["t", "ghost"]
    new = [commit_topic(10, (0,), topic_id=U_ID), commit_topic(10, (0,), topic_id=GONE),
           commit_topic(10, (0,), topic_id=None)]
    assert [n for _, n in request_names(new, 10, IMAGE)] == ["u", None, None]
    assert (topic_key(9), topic_key(10)) == ("name", "topic_id")


def test_a_v10_commit_is_answered_by_id_unknown_ids_with_unknown_topic_id():
    asked = [commit_topic(10, (0, 1), topic_id=T_ID), commit_topic(10, (3,), topic_id=GONE),
             commit_topic(10, (5,), topic_id=T_ID)]
    errors = {("t", 0): E.NONE, ("t", 1): E.NONE, ("t", 5): E.UNKNOWN_TOPIC_OR_PARTITION}
    out = commit_answer_topics(response_class(8, 10), request_names(asked, 10, IMAGE), errors, IMAGE)
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in out] == [
        (T_ID, [(0, E.NONE), (1, E.NONE), (5, E.UNKNOWN_TOPIC_OR_PARTITION)]),   # one entry per topic
        (GONE, [(3, E.UNKNOWN_TOPIC_ID)]),
    ]
