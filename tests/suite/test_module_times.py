"""`make test` ends with the slowest modules' wall time (tests/plugins/module_times.py)."""

from __future__ import annotations

import re
from pathlib import Path

pytest_plugins = ["pytester"]

# The nested sessions run in this process: without `-p no:kgroup` the kgroup plugin's
# sessionfinish would reap every child of the outer session too (its shared brokers and
# the reference Kafka), which broke every later module of that pytest-xdist worker.


def test_the_slowest_modules_are_listed_slowest_first_with_their_test_counts(pytester):
    pytester.makepyfile(
        test_slow="import time, pytest\n"
                  "@pytest.fixture(scope='module')\n"
                  "def slow_setup():\n"
                  "    time.sleep(0.3)\n"
                  "def test_a(slow_setup):\n    pass\n"
                  "def test_b(slow_setup):\n    time.sleep(0.2)\n",
        test_quick="def test_c():\n    pass\n",
        test_skipped="import pytest\n@pytest.mark.skip\ndef test_d():\n    pass\n")
    result = pytester.runpytest("-p", "tests.plugins.module_times", "-p", "no:kgroup")
    result.assert_outcomes(passed=3, skipped=1)
    out = result.stdout.str()
    assert re.search(r"slowest 3 of 3 modules \(wall time of their tests, [0-9.]+ min in all\)", out), out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+[0-9.]+s\s+\d+ tests\s", line)]
    assert [row[-1] for row in rows][0] == "test_slow.py"
    assert {row[-1]: int(row[1]) for row in rows} == {"test_slow.py": 2, "test_quick.py": 1, "test_skipped.py": 1}
    slow = float(rows[0][0].rstrip("s"))
    assert slow >= 0.5                    # the module fixture's setup counts with its tests


def test_only_the_slowest_fifteen_are_shown(pytester):
    for i in range(17):
        pytester.makepyfile(**{f"test_m{i:02d}": "def test_x():\n    pass\n"})
    result = pytester.runpytest("-p", "tests.plugins.module_times", "-p", "no:kgroup")
    result.assert_outcomes(passed=17)
    assert "slowest 15 of 17 modules" in result.stdout.str()
    assert len(re.findall(r"\d+ tests\s+test_m\d\d\.py", result.stdout.str())) == 15


def test_with_workers_the_total_says_it_sums_them(pytester, monkeypatch):
    # The subprocess imports the plugin from this repo's `tests` package.
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    for i in range(4):
        pytester.makepyfile(**{f"test_w{i}": "def test_x():\n    pass\n"})
    result = pytester.runpytest_subprocess("-n", "2", "-p", "tests.plugins.module_times", "-p", "no:kgroup")
    result.assert_outcomes(passed=4)
    assert re.search(r"slowest 4 of 4 modules \(wall time of their tests, [0-9.]+ min in all, "
                     r"summed over 2 workers\)", result.stdout.str()), result.stdout.str()
