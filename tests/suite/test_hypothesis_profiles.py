"""Hypothesis in CI is derandomized (`--hypothesis-profile=ci`, what `make test` passes): the
same examples on every run, no example database; `explore` (`make explore`) draws fresh
examples, ten times as many, including for tests that set their own max_examples."""

from __future__ import annotations

import json
from pathlib import Path

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

PROPERTY = """
import json, os
from hypothesis import given, settings, strategies as st

SEEN = os.environ["SEEN"]

def record(name, x):
    with open(SEEN, "a") as f:
        f.write(json.dumps([name, x]) + "\\n")

@given(st.integers())
def test_default(x):
    record("default", x)

@settings(max_examples=7)
@given(st.integers())
def test_own_settings(x):
    record("own", x)

class TestInClass:
    @given(st.integers())
    @settings(max_examples=5)
    def test_method(self, x):
        record("method", x)
"""


def run(pytester, monkeypatch, tmp_path, profile: str, name: str) -> list:
    """The sample properties in a pytest of their own (a profile is process-wide state)."""
    seen = tmp_path / name
    pytester.makepyfile(test_props=PROPERTY)
    monkeypatch.setenv("SEEN", str(seen))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    result = pytester.runpytest_subprocess("-p", "tests.plugins.hypothesis_profiles",
                                           f"--hypothesis-profile={profile}")
    result.assert_outcomes(passed=3)
    return [tuple(json.loads(line)) for line in seen.read_text().splitlines()]


def test_ci_draws_the_same_examples_every_run_and_keeps_no_database(pytester, monkeypatch, tmp_path):
    first = run(pytester, monkeypatch, tmp_path, "ci", "first")
    second = run(pytester, monkeypatch, tmp_path, "ci", "second")
    assert first == second
    assert sum(1 for name, _ in first if name == "own") <= 7
    assert not (pytester.path / ".hypothesis" / "examples").exists()


def test_explore_draws_fresh_examples_and_ten_times_as_many(pytester, monkeypatch, tmp_path):
    first = run(pytester, monkeypatch, tmp_path, "explore", "first")
    second = run(pytester, monkeypatch, tmp_path, "explore", "second")
    assert first != second
    counts = {name: sum(1 for n, _ in first if n == name) for name in ("default", "own", "method")}
    # A test's own max_examples is multiplied (at least EXPLORE_DEFAULT_EXAMPLES); one without
    # settings gets the profile's 1000.
    assert counts["own"] >= 1000 and counts["method"] >= 1000 and counts["default"] >= 1000, counts


def test_explore_multiplies_what_a_test_asked_for():
    from hypothesis import given, settings, strategies as st

    from tests.plugins.hypothesis_profiles import EXPLORE_FACTOR

    @settings(max_examples=300)
    @given(st.integers())
    def prop(x):
        pass

    class Item:
        obj = prop

    class Config:
        def getoption(self, name, default=None):
            return "explore"

    from tests.plugins.hypothesis_profiles import pytest_collection_modifyitems

    pytest_collection_modifyitems(Config(), [Item()])
    assert prop._hypothesis_internal_use_settings.max_examples == 300 * EXPLORE_FACTOR


def test_make_test_runs_ci_and_make_explore_runs_explore():
    makefile = (ROOT / "Makefile").read_text()

    def recipe(target: str) -> str:
        block = makefile.split(f"\n{target}:", 1)[1]
        return block.split("\n\n", 1)[0]

    assert "--hypothesis-profile=ci" in recipe("test")
    assert "--hypothesis-profile=ci" in (ROOT / "tests" / "stress.py").read_text()
    assert "-m hypothesis --hypothesis-profile=explore" in recipe("explore")
