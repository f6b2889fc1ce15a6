"""Hypothesis profiles of the suite, chosen with `--hypothesis-profile NAME`.

- `ci` (`make test`, `make stress`): the same examples on every run — derandomized (each
  test's seed comes from its name), the stored example database ignored, no deadline and no
  too-slow health check (both measure wall time, which a loaded machine stretches). A
  property that fails in CI fails every time, on every machine, until it is fixed.
- `explore` (`make explore`): fresh randomness on every run and EXPLORE_FACTOR times each
  test's examples, with the example database kept, so a counterexample found is replayed
  first next time. For whoever changes the core: run it before asking for a merge.

Without `--hypothesis-profile`, Hypothesis' own defaults apply (random, 100 examples unless
a test says otherwise).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

EXPLORE_FACTOR = 10
EXPLORE_DEFAULT_EXAMPLES = 1000

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True,
                          max_examples=EXPLORE_DEFAULT_EXAMPLES, suppress_health_check=[HealthCheck.too_slow])


def _settings_holder(function):
    """The function object that carries a @given test's settings (a method's function)."""
    return getattr(function, "__func__", function)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `explore`, a test's own `max_examples` (most properties set one) is multiplied
    too: a profile alone only changes the tests that set none."""
    if config.getoption("hypothesis_profile", None) != "explore":
        return
    for item in items:
        holder = _settings_holder(getattr(item, "obj", None))
        own = getattr(holder, "_hypothesis_internal_use_settings", None)
        if own is None or not getattr(holder, "_hypothesis_internal_settings_applied", False):
            continue            # no settings of its own: the profile's max_examples applies
        wanted = max(own.max_examples * EXPLORE_FACTOR, EXPLORE_DEFAULT_EXAMPLES)
        holder._hypothesis_internal_use_settings = settings(own, max_examples=wanted)
