"""The class of bug: an API answering a request for something that does not exist
differently from Kafka (issue #25: OffsetCommit stored offsets of unknown topics, and more).

For every API kgroup serves -- walked from its served-API table, so a new API is covered
the day it is served -- one request whose every resource-naming field (topic, topic id,
partition, group, transactional id, producer id, member, user) names nothing that exists
(tests/integration/missing_resources.py builds it from the API's schema). Each answer's
error codes, field by field, must be the row for that API in docs/protocol.md's table
"Requests for resources that do not exist"; and the table itself must be what Apache Kafka
4.4 answers to the same requests, so the document cannot rot. A served API without a row
fails the first test: add the row (`python -m tests.integration.missing_resources` prints
the table from Kafka 4.4). Where kgroup differs on purpose, the document says so and why,
in a list of its own, and kgroup is held to that.
"""

from __future__ import annotations

import pytest

from tests.integration.missing_resources import answers, broker_versions, read_differences, read_table, served

pytestmark = pytest.mark.integration


def test_the_table_has_a_row_for_every_served_api_at_a_version_kgroup_serves():
    table, apis = read_table(), served()
    assert sorted(table) == sorted(apis), "docs/protocol.md's table and the served APIs differ"
    for api_key, (name, version, _) in table.items():
        assert name == apis[api_key][0]
        assert apis[api_key][1] <= version <= apis[api_key][2], f"{name} v{version} is not served"


def test_kgroup_answers_requests_for_missing_resources_as_the_table_says(kgroup_broker_session):
    """As Kafka's row says -- or, for the few APIs listed under "Where kgroup answers
    differently, on purpose", as that list says."""
    table, own = read_table(), read_differences()
    want = {k: own.get(k, answer) for k, (_, _, answer) in table.items()}
    got = answers(kgroup_broker_session.bootstrap, {k: v for k, (_, v, _) in table.items()})
    differ = {table[k][0]: (want[k], got[k]) for k in table if got[k] != want[k]}
    assert not differ, "\n".join(f"{name}:\n  Kafka 4.4: {want}\n  kgroup:    {have}"
                                 for name, (want, have) in differ.items())


def test_the_table_is_what_kafka_answers(kafka_reference):
    """Differential: the table's version is the highest both serve, and its answers Kafka's."""
    table, apis = read_table(), served()
    theirs = broker_versions(kafka_reference.bootstrap)
    for api_key, (name, version, _) in table.items():
        # (Kafka answers the telemetry pair without advertising it: asked at kgroup's newest.)
        newest = min(apis[api_key][2], theirs[api_key][1]) if api_key in theirs else apis[api_key][2]
        assert version == newest, f"{name}: ask at the highest common version"
    got = answers(kafka_reference.bootstrap, {k: v for k, (_, v, _) in table.items()})
    differ = {table[k][0]: (table[k][2], got[k]) for k in table if got[k] != table[k][2]}
    assert not differ, "\n".join(f"{name}:\n  table:     {want}\n  Kafka 4.4: {have}"
                                 for name, (want, have) in differ.items())
