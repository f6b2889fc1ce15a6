"""The flake hunt: run tests several times, in random order, with the machine loaded, and
report every test that failed at least once.

    python -m tests.stress                                   # 3 passes of tests/integration
    python -m tests.stress --passes 5 tests/integration/test_membership.py -k instance_id
    make stress PASSES=2 STRESS_TESTS="tests/integration/test_group_events.py"

Each pass is one pytest run (`--random-order`, modules and the tests in each shuffled with a
seed of its own, printed so a failing order can be replayed with `--random-order-seed`),
while `stress-ng --cpu N` keeps N cores busy beside it (`--load 0`: no load). A pass's
output goes to `OUT/pass-K.log`, its results to `OUT/pass-K.xml` (JUnit XML); the summary
at the end lists each test that failed or errored in any pass, with the passes and seeds.
Exit status 0 only when every test passed in every pass.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class PassResult:
    number: int
    seed: int
    status: int
    seconds: float
    tests: int = 0
    failed: dict[str, str] = field(default_factory=dict)   # test id -> first line of why


def junit_failures(path: Path) -> tuple[int, dict[str, str]]:
    """(tests run, {test id: first line of its failure or error}) from a JUnit XML report."""
    root = ET.parse(path).getroot()
    tests = 0
    failed: dict[str, str] = {}
    for case in root.iter("testcase"):
        tests += 1
        for outcome in ("failure", "error"):
            node = case.find(outcome)
            if node is not None:
                name = _test_id(case.get("classname", ""), case.get("name", ""))
                message = (node.get("message") or node.text or outcome).strip().splitlines()
                failed.setdefault(name, f"{outcome}: {message[0][:200] if message else ''}")
    return tests, failed


# pytest's last line: "2 failed, 730 passed, 219 warnings in 3141.89s (0:52:21)".
_SUMMARY = re.compile(r"\b(passed|failed|errors?|skipped|no tests ran)\b.* in [0-9.]+s")


def pytest_summary(log_text: str) -> str:
    """The pass's pytest summary line: the last one that looks like it (a child's output,
    say a librdkafka log line, may come after it), else the last line."""
    lines = log_text.strip().splitlines()
    found = [line for line in lines if _SUMMARY.search(line) and not line.startswith(("%", " "))]
    return (found or lines or [""])[-1]


def _test_id(classname: str, name: str) -> str:
    """pytest's node id from JUnit's classname (dotted module path, then classes) and name."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        module = Path(*parts[:i]).with_suffix(".py")
        if (ROOT / module).exists():
            return "::".join([module.as_posix(), *parts[i:], name])
    return f"{classname}::{name}"


def start_load(cpus: int) -> subprocess.Popen | None:
    """`stress-ng --cpu N` in a session of its own (ended with its whole group)."""
    if cpus <= 0:
        return None
    exe = shutil.which("stress-ng")
    if exe is None:
        sys.exit("stress-ng is not installed: `make stress-ng` installs it (Debian's package)")
    return subprocess.Popen([exe, "--cpu", str(cpus), "--quiet", "--timeout", "24h"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def stop_load(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_pass(number: int, seed: int, out: Path, pytest_args: list[str], timeout: float) -> PassResult:
    xml, log = out / f"pass-{number}.xml", out / f"pass-{number}.log"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "random_order", "--random-order",
               f"--random-order-seed={seed}", f"--junitxml={xml}", "-p", "tests.plugins.hypothesis_profiles", "--hypothesis-profile=ci", *pytest_args]
    print(f"pass {number}: seed {seed}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    with open(log, "wb") as sink:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            status = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status = -1
    result = PassResult(number, seed, status, time.monotonic() - started)
    if xml.exists():
        result.tests, result.failed = junit_failures(xml)
    if status not in (0, 1) and not result.failed:
        # The run itself broke (a timeout, an internal error, a crash): count it as a failure.
        result.failed[f"<pass {number}>"] = f"pytest exited with {status}, see {log}"
    summary = pytest_summary(log.read_text(errors="replace")) if log.exists() else ""
    print(f"pass {number}: {result.tests} tests, {len(result.failed)} failed, {result.seconds:.0f} s"
          f"{' — ' + summary if summary else ''}", flush=True)
    return result


def report(results: list[PassResult]) -> str:
    """Each test that failed at least once: in how many passes, which (with their seeds), why."""
    seen: dict[str, list[tuple[PassResult, str]]] = {}
    for result in results:
        for test, why in result.failed.items():
            seen.setdefault(test, []).append((result, why))
    lines = [f"stress: {len(results)} pass(es), {len(seen)} test(s) failed at least once"]
    for test, hits in sorted(seen.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        passes = ", ".join(f"pass {r.number} (seed {r.seed})" for r, _ in hits)
        lines.append(f"  {len(hits)}/{len(results)}  {test}  [{passes}]")
        lines.append(f"        {hits[0][1]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=3, help="pytest runs (default 3)")
    parser.add_argument("--load", type=int, default=2, help="CPUs stress-ng keeps busy (default 2; 0: none)")
    parser.add_argument("--seed", type=int, help="seed of the first pass (then +1 per pass); default random")
    parser.add_argument("--out", type=Path, default=ROOT / ".stress", help="logs and reports (default .stress/)")
    parser.add_argument("--pass-timeout", type=float, default=3 * 3600, help="seconds one pass may take")
    parser.add_argument("pytest_args", nargs="*", help="tests and pytest options (default tests/integration)")
    args, extra = parser.parse_known_args(argv)
    pytest_args = [*args.pytest_args, *extra] or ["tests/integration"]
    args.out.mkdir(parents=True, exist_ok=True)
    first = args.seed if args.seed is not None else random.randrange(1, 10**6)
    load = start_load(args.load)
    results: list[PassResult] = []
    try:
        for number in range(1, args.passes + 1):
            results.append(run_pass(number, first + number - 1, args.out, pytest_args, args.pass_timeout))
    finally:
        stop_load(load)
    print(report(results), flush=True)
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
