"""A file a test leaves open in its tmp_path is closed after its module and named in the
summary (tests/plugins/open_files.py); files elsewhere are left be."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

LEAKS = """
import json, os

OUTSIDE = os.open(os.environ["OUTSIDE_FILE"], os.O_RDWR | os.O_CREAT)

def test_leaves_files_open(tmp_path):
    paths = [str(tmp_path / f"seg{i}.log") for i in range(3)]
    kept = [(os.open(p, os.O_RDWR | os.O_CREAT), p) for p in paths]
    with open(os.environ["KEPT_FILE"], "w") as f:
        json.dump({"inside": kept, "outside": OUTSIDE}, f)

def test_the_rest_of_its_module(tmp_path):
    pass
"""

# The next module: by then the first one's files are closed, the one outside stays open.
LATER = """
import json, os

def test_after_it():
    with open(os.environ["KEPT_FILE"]) as f:
        kept = json.load(f)
    for fd, path in kept["inside"]:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue                     # closed
        assert target != path, f"{path} is still open"
    os.fstat(kept["outside"])            # opened at import, outside any tmp_path: untouched
"""


def test_files_left_open_in_a_tmp_path_are_closed_and_listed_under_xdist(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{REPO}:{REPO / 'src'}")
    monkeypatch.setenv("OUTSIDE_FILE", str(pytester.path / "outside.txt"))
    monkeypatch.setenv("KEPT_FILE", str(pytester.path / "kept.json"))
    pytester.makepyfile(test_a_leaks=LEAKS, test_b_later=LATER)
    result = pytester.runpytest_subprocess("-n", "1", "-p", "tests.plugins.open_files", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "3 files left open in tests' tmp_path, closed after them" in out, out
    assert "3  test_a_leaks.py" in out, out


def test_a_test_that_closes_its_files_is_not_listed(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{REPO}:{REPO / 'src'}")
    pytester.makepyfile(test_tidy="import os\n"
                                  "def test_tidy(tmp_path):\n"
                                  "    os.close(os.open(tmp_path / 'f', os.O_RDWR | os.O_CREAT))\n")
    result = pytester.runpytest_subprocess("-p", "tests.plugins.open_files")
    result.assert_outcomes(passed=1)
    assert "left open" not in result.stdout.str()
