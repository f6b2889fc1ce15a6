"""KIP-848 subscription regexes are RE2, as Kafka's coordinator compiles them (RE2/J):
tests/reference's consumer_regex_syntax scenario holds kgroup to Kafka 4.4 on the patterns
where RE2 and Python's re disagree; these pin the helper and the coordinator's use of it."""

from __future__ import annotations

import pytest

from kgroup.core.topic_regex import InvalidRegex, full_matcher


@pytest.mark.parametrize("pattern", ["(?=t)t", "(t)\\1", "t++", "t{1001}", "["])
def test_kip848_patterns_re2_refuses_are_invalid(pattern):
    with pytest.raises(InvalidRegex):
        full_matcher(pattern)


@pytest.mark.parametrize(("pattern", "name", "matches"), [
    ("orders\\z", "orders", True),
    ("\\pL+", "orders", True),
    ("\\Qa.b\\E", "a.b", True),
    ("\\Qa.b\\E", "axb", False),
    ("orders-[0-9]", "orders-1", True),
    ("orders-[0-9]", "orders-12", False),        # the whole name, not a prefix
    ("rders", "orders", False),                  # nor a part of it
    ("(?<kind>orders)-[0-9]", "orders-1", True),  # RE2/J 1.8, Kafka 4.4's, takes it too
])
def test_kip848_patterns_match_whole_topic_names(pattern, name, matches):
    assert bool(full_matcher(pattern)(name)) is matches
