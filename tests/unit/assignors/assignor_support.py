"""Shared helpers for the assignor tests: hypothesis settings, validity and balance checks.

The settings are applied per test (not loaded as the global profile) so running the whole
repository's suite does not change other layers' hypothesis settings. HYPOTHESIS_PROFILE
style soaking: set KGROUP_ASSIGNOR_EXAMPLES=1000.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("KGROUP_ASSIGNOR_EXAMPLES", "60"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

Target = Mapping[str, Mapping[str, tuple[int, ...]]]


def check_valid(result: Target, subs: Mapping[str, frozenset[str]],
                counts: Mapping[str, int], complete: bool = True) -> None:
    """Every subscribed partition assigned exactly once (or at most once if not complete),
    only to subscribers, only existing partitions, sorted tuples."""
    owner: dict[tuple[str, int], str] = {}
    for m, asg in result.items():
        for t, parts in asg.items():
            assert t in subs[m], f"{m} got {t} it does not subscribe to"
            assert list(parts) == sorted(set(parts)), f"{m}/{t} not sorted/unique: {parts}"
            for p in parts:
                assert 0 <= p < counts[t], f"{m} got {t}-{p} that does not exist"
                assert (t, p) not in owner, f"{t}-{p} given to {owner[(t, p)]} and {m}"
                owner[(t, p)] = m
    if complete:
        wanted = {t for s in subs.values() for t in s if counts.get(t, 0) > 0}
        missing = [(t, p) for t in wanted for p in range(counts[t]) if (t, p) not in owner]
        assert not missing, f"unassigned: {missing[:10]}"


def sizes(result: Target) -> dict[str, int]:
    return {m: sum(len(p) for p in a.values()) for m, a in result.items()}


def check_balanced(result: Target, subs: Mapping[str, frozenset[str]]) -> None:
    """Nobody holds a partition that a fellow subscriber with two fewer could take."""
    n = sizes(result)
    for a, asg in result.items():
        for t in asg:
            for b in result:
                if t in subs[b]:
                    assert n[a] <= n[b] + 1, (
                        f"{a} has {n[a]} incl. topic {t}, {b} subscribes to it and has {n[b]}")


def moved(before: Target, after: Target) -> int:
    """Partitions whose owner changed among partitions that had an owner before."""
    old = {(t, p): m for m, a in before.items() for t, ps in a.items() for p in ps}
    new = {(t, p): m for m, a in after.items() for t, ps in a.items() for p in ps}
    return sum(1 for tp, m in old.items() if tp in new and new[tp] != m)
