"""A streams group's topology against the topics that exist (KIP-1071): Kafka's statuses and
errors, the internal topics to create and their partition counts, the tasks per subtopology.
The same topologies run as real Kafka Streams apps on kgroup and Kafka 4.4 in tests/streams.
"""

from __future__ import annotations

import pytest

from kgroup.core.streams_topology import (
    CopartitionGroup,
    InvalidTopology,
    StreamsTopology,
    Subtopology,
    StreamsTopicInfo,
    TopologyStatus,
    check_request_topology,
    check_topic_names,
    configure,
    summarize,
)

CHANGELOG = StreamsTopicInfo("app-counts-changelog", configs=(("cleanup.policy", "compact"),))
REPARTITION = StreamsTopicInfo("app-by-key-repartition", configs=(("cleanup.policy", "delete"),))

# input --(select key)--> repartition --(count)--> output: the count-per-key app's topology.
COUNT = StreamsTopology(1, (
    Subtopology("0", source_topics=("input",), repartition_sink_topics=(REPARTITION.name,)),
    Subtopology("1", repartition_source_topics=(REPARTITION,), state_changelog_topics=(CHANGELOG,)),
))


def topics(**counts: int):
    return lambda name: counts.get(name.replace("-", "_"))


def test_a_stateless_topology_is_ready_with_a_task_per_partition():
    topology = StreamsTopology(1, (Subtopology("0", source_topics=("a", "b")),))
    configured = configure(topology, topics(a=3, b=5))
    assert configured.ready and configured.status is None
    assert configured.tasks() == {"0": 5}
    assert not configured.subtopologies[0].stateful


def test_missing_source_topics_are_a_status_not_an_error():
    topology = StreamsTopology(1, (Subtopology("0", source_topics=("zeta", "alpha")),))
    configured = configure(topology, topics())
    assert not configured.ready and configured.subtopologies is None
    assert configured.status == (TopologyStatus.MISSING_SOURCE_TOPICS, "Source topics alpha, zeta are missing.")


def test_many_missing_topics_are_summarized_as_kafka_does():
    assert summarize(["a", "b", "c", "d", "e"]) == "a, b, c and 2 additional topics"
    assert summarize([]) == "<none>"


def test_internal_topics_are_created_with_the_source_partition_count_then_the_topology_is_ready():
    configured = configure(COUNT, topics(input=4))
    assert configured.status == (TopologyStatus.MISSING_INTERNAL_TOPICS,
                                 "Internal topics are missing: app-by-key-repartition, app-counts-changelog")
    created = {t.name: (t.partitions, dict(t.configs)) for t in configured.to_create}
    assert created == {"app-by-key-repartition": (4, {"cleanup.policy": "delete"}),
                       "app-counts-changelog": (4, {"cleanup.policy": "compact"})}
    ready = configure(COUNT, topics(input=4, app_by_key_repartition=4, app_counts_changelog=4))
    assert ready.ready and ready.tasks() == {"0": 4, "1": 4}
    assert [s.stateful for s in ready.subtopologies] == [False, True]


def test_an_internal_topic_with_another_partition_count_is_incorrectly_partitioned():
    configured = configure(COUNT, topics(input=4, app_by_key_repartition=2))
    assert configured.status == (TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                                 "Existing topic app-by-key-repartition has different number of partitions: "
                                 "expected 4, found 2")


def test_a_fixed_repartition_count_is_kept():
    fixed = StreamsTopicInfo(REPARTITION.name, partitions=7)
    topology = StreamsTopology(1, (COUNT.subtopologies[0],
                                   Subtopology("1", repartition_source_topics=(fixed,),
                                               state_changelog_topics=(CHANGELOG,))))
    configured = configure(topology, topics(input=4))
    assert {t.name: t.partitions for t in configured.to_create} == {"app-by-key-repartition": 7,
                                                                     "app-counts-changelog": 7}


def test_joined_topics_must_be_copartitioned():
    join = Subtopology("0", source_topics=("left", "right"),
                       copartition_groups=(CopartitionGroup(source_topics=(0, 1)),))
    configured = configure(StreamsTopology(1, (join,)), topics(left=2, right=3))
    assert configured.status == (TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS,
                                 "Following topics do not have the same number of partitions: [{left=2, right=3}]")
    assert configure(StreamsTopology(1, (join,)), topics(left=3, right=3)).ready


def test_a_repartition_topic_joined_with_a_source_takes_its_partition_count():
    topology = StreamsTopology(1, (
        Subtopology("0", source_topics=("wide",), repartition_sink_topics=("r",)),
        Subtopology("1", source_topics=("narrow",), repartition_source_topics=(StreamsTopicInfo("r"),),
                    copartition_groups=(CopartitionGroup(source_topics=(0,), repartition_source_topics=(0,)),)),
    ))
    configured = configure(topology, topics(wide=8, narrow=2))
    assert {t.name: t.partitions for t in configured.to_create} == {"r": 2}


def test_a_repartition_source_nobody_writes_is_an_invalid_topology():
    topology = StreamsTopology(1, (Subtopology("0", source_topics=("in",),
                                               repartition_source_topics=(StreamsTopicInfo("orphan"),)),))
    with pytest.raises(InvalidTopology, match="never used as a sink topic"):
        configure(topology, topics(**{"in": 1}))


def test_a_loop_of_repartition_topics_is_an_invalid_topology():
    topology = StreamsTopology(1, (
        Subtopology("0", repartition_source_topics=(StreamsTopicInfo("x"),), repartition_sink_topics=("y",)),
        Subtopology("1", repartition_source_topics=(StreamsTopicInfo("y"),), repartition_sink_topics=("x",)),
    ))
    with pytest.raises(InvalidTopology, match="loops in the topology"):
        configure(topology, topics())


def test_kafka_refuses_a_changelog_with_a_partition_count_internal_topics_and_bad_names():
    with pytest.raises(InvalidTopology, match="Changelog topic c must have an undefined partition count, but it "
                                              "is set to 3."):
        check_request_topology(StreamsTopology(1, (Subtopology("0", ("in",), state_changelog_topics=(
            StreamsTopicInfo("c", partitions=3),)),)))
    with pytest.raises(InvalidTopology, match="Use of Kafka internal topics __consumer_offsets in a Kafka Streams"):
        check_topic_names(StreamsTopology(1, (Subtopology("0", ("__consumer_offsets",)),)))
    with pytest.raises(InvalidTopology, match="Topic names bad/name are not valid topic names."):
        check_topic_names(StreamsTopology(1, (Subtopology("0", ("bad/name",)),)))
    check_topic_names(COUNT)
    check_request_topology(COUNT)


def test_a_copartition_group_naming_a_topic_the_subtopology_lacks_is_refused():
    # Kafka 4.4 fails such a heartbeat with UNKNOWN_SERVER_ERROR; kgroup says what is wrong.
    with pytest.raises(InvalidTopology, match="Copartition group of subtopology 0 refers to source topic index 3, "
                                              "but the subtopology has 1 source topics."):
        check_request_topology(StreamsTopology(1, (Subtopology("0", ("in",), copartition_groups=(
            CopartitionGroup(source_topics=(0, 3)),)),)))
    with pytest.raises(InvalidTopology, match="refers to repartition source topic index 1"):
        check_request_topology(StreamsTopology(1, (Subtopology("0", ("in",), repartition_source_topics=(
            REPARTITION,), copartition_groups=(CopartitionGroup((0,), (), (0, 1)),)),)))
