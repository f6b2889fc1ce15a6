"""Tests wait on states, not on time: `time.sleep` is refused everywhere under tests/ (the
integration tests, and the Spark, Streams, lab, interop, Java, Go and reference ones that
start real processes too) except in the named helper, tests/integration/waits.py
(`wait_for` / `until` for a state, `hold` for a window that is the point of a check, `pace`
for a workload's rhythm). Code a test runs in another process (a string it writes to a
script) is that program's own business."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCOPE = ROOT / "tests"
HELPER = SCOPE / "integration" / "waits.py"


def sleeps(source: str) -> list[int]:
    """Lines that call time.sleep: `time.sleep(...)`, `<alias of time>.sleep(...)`, or a name
    imported as `from time import sleep [as x]`."""
    tree = ast.parse(source)
    modules = {"time"} | {a.asname for n in ast.walk(tree) if isinstance(n, ast.Import)
                          for a in n.names if a.name == "time" and a.asname}
    names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "time"
             for a in n.names if a.name == "sleep"}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "sleep" and isinstance(f.value, ast.Name)
                and f.value.id in modules) or (isinstance(f, ast.Name) and f.id in names):
            lines.append(node.lineno)
    return lines


def test_no_test_sleeps_outside_the_named_helper():
    found = [f"{path.relative_to(ROOT)}:{line}" for path in sorted(SCOPE.rglob("*.py")) if path != HELPER
             for line in sleeps(path.read_text())]
    assert not found, ("time.sleep in tests: wait for the state you need with "
                       "tests/integration/waits.py's wait_for/until, or say why time must pass "
                       "with hold(seconds, why) / pace(seconds):\n  " + "\n  ".join(found))


def test_the_lint_sees_every_spelling_of_a_sleep():
    assert sleeps("import time\ntime.sleep(1)\n") == [2]
    assert sleeps("import time as t\nt.sleep(1)\n") == [2]
    assert sleeps("from time import sleep\nsleep(1)\n") == [2]
    assert sleeps("from time import sleep as nap\nnap(1)\n") == [2]
    assert sleeps("import asyncio\nasync def f():\n    await asyncio.sleep(1)\n") == []
    assert sleeps("from tests.integration.waits import hold\nhold(1, 'why')\n") == []


def test_the_helper_is_where_the_sleeps_are():
    assert sleeps(HELPER.read_text()), "waits.py is the helper that sleeps"
