"""`make stress` (tests/stress.py): several passes in random order, each test that failed at
least once reported with its passes and seeds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.stress import PassResult, junit_failures, pytest_summary, report

ROOT = Path(__file__).resolve().parents[2]

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.suite.test_stress" name="test_ok" time="0.1"/>
<testcase classname="tests.suite.test_stress" name="test_bad[x]" time="0.1">
  <failure message="AssertionError: timed out&#10;more">trace</failure></testcase>
<testcase classname="tests.suite.test_stress.TestClass" name="test_setup" time="0.1">
  <error message="failed on setup with &quot;RuntimeError: port in use&quot;">trace</error></testcase>
<testcase classname="tests.suite.test_stress" name="test_skipped" time="0"><skipped message="no"/></testcase>
</testsuite></testsuites>
"""


def test_failures_and_errors_are_read_from_junit_xml_under_pytest_node_ids(tmp_path):
    xml = tmp_path / "pass.xml"
    xml.write_text(JUNIT)
    tests, failed = junit_failures(xml)
    assert tests == 4
    assert failed == {
        "tests/suite/test_stress.py::test_bad[x]": "failure: AssertionError: timed out",
        "tests/suite/test_stress.py::TestClass::test_setup": 'error: failed on setup with "RuntimeError: port in use"',
    }


def test_the_report_counts_each_test_over_the_passes_it_failed_in():
    results = [PassResult(1, 10, 1, 5.0, 3, {"t.py::a": "failure: x", "t.py::b": "error: y"}),
               PassResult(2, 11, 0, 5.0, 3, {}),
               PassResult(3, 12, 1, 5.0, 3, {"t.py::a": "failure: z"})]
    lines = report(results).splitlines()
    assert lines[0] == "stress: 3 pass(es), 2 test(s) failed at least once"
    assert lines[1] == "  2/3  t.py::a  [pass 1 (seed 10), pass 3 (seed 12)]"
    assert lines[3] == "  1/3  t.py::b  [pass 1 (seed 10)]"
    assert report(results[1:2]) == "stress: 1 pass(es), 0 test(s) failed at least once"


def test_a_test_failing_in_one_pass_of_two_is_reported_and_the_exit_status_says_so(tmp_path):
    # A test that fails the first time it runs and passes after; another that always passes.
    (tmp_path / "test_sample.py").write_text(
        "from pathlib import Path\n"
        "def test_flaky():\n"
        "    mark = Path(__file__).with_name('ran')\n"
        "    first = not mark.exists()\n"
        "    mark.touch()\n"
        "    assert not first, 'failed the first time'\n"
        "def test_steady():\n"
        "    pass\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "tests.stress", "--passes", "2", "--load", "0", "--seed", "7",
                           "--out", str(out), str(tmp_path / "test_sample.py"), "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "--random-order-seed=7" in done.stdout and "--random-order-seed=8" in done.stdout
    assert "stress: 2 pass(es), 1 test(s) failed at least once" in done.stdout
    assert "  1/2  " in done.stdout and "::test_flaky  [pass 1 (seed 7)]" in done.stdout
    assert "test_steady" not in done.stdout.split("stress: 2 pass(es)")[1]
    assert (out / "pass-1.log").exists() and (out / "pass-2.xml").exists()


def test_the_named_flaky_tests_still_exist():
    """`make stress-named` runs tests/stress_named.txt's node ids: a renamed test would
    drop out of it silently, so each must still be collected, once."""
    ids = [line for line in (ROOT / "tests" / "stress_named.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
    assert len(ids) == 6
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *ids],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert done.returncode == 0 and sorted(collected) == sorted(ids), done.stdout[-2000:] + done.stderr[-2000:]


def test_the_pass_line_quotes_pytests_summary_even_when_a_child_printed_after_it():
    # Seen in make stress: pass 2's line quoted a librdkafka log line written after pytest's.
    log = ("FAILED tests/a.py::test_x\n"
           "2 failed, 730 passed, 219 warnings in 3141.89s (0:52:21)\n"
           "%3|1795989443.040|FAIL|rdkafka#producer-532| [thrd:127.0.0.1:24183/bootstrap]: "
           "Connect to ipv4#127.0.0.1:24183 failed: Connection refused (after 0ms in state CONNECT)\n")
    assert pytest_summary(log) == "2 failed, 730 passed, 219 warnings in 3141.89s (0:52:21)"
    assert pytest_summary("no summary here\n") == "no summary here"
