"""Regular expressions as Kafka's brokers read them: RE2 syntax (Kafka compiles KIP-848's
SubscribedTopicRegex and KIP-1152's transactional-id pattern with RE2/J), matched against a
whole name.

Python's `re` is not that language: it takes lookarounds, backreferences, possessive
quantifiers and counted repetitions above 1000, which RE2 refuses, and refuses `\\z`, `\\pL`,
`\\Q...\\E` and `(?<name>...)`, which RE2 takes, and so does RE2/J 1.8, the version Kafka 4.4
ships (the first three are in the differential scenario; the last was checked with its jar).
A pattern one broker refuses and the other takes would subscribe a consumer to topics on
kgroup that Kafka answers INVALID_REGULAR_EXPRESSION, or the other way round.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import re2

# RE2 logs every pattern it refuses to stderr unless told not to; a refusal is an answer here.
_QUIET = re2.Options()
_QUIET.log_errors = False


class InvalidRegex(ValueError):
    """The pattern is not RE2 (the message says why, in RE2's words)."""


@lru_cache(maxsize=1024)
def full_matcher(pattern: str) -> Callable[[str], object]:
    """A function telling whether a name matches `pattern` as a whole; InvalidRegex if RE2
    does not compile it. Compiled once per pattern (a group re-resolves its regexes often)."""
    try:
        return re2.compile(pattern, _QUIET).fullmatch
    except re2.error as exc:
        raise InvalidRegex(str(exc)) from None


def regex_topics(pattern: str, names) -> set[str]:
    """The names among `names` that `pattern` matches whole; none if it is not RE2 (a regex
    stored by a kgroup that checked them with Python's `re`: Kafka would never have let a
    member subscribe with it)."""
    try:
        matches = full_matcher(pattern)
    except InvalidRegex:
        return set()
    return {n for n in names if matches(n)}
