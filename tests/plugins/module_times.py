"""The suite's wall time per test module, the slowest printed at the end of the run.

A module's time is the sum of its tests' setup, call and teardown: fixtures of module scope
count in its first test's setup and last test's teardown, and a session fixture (a shared
broker, the reference Kafka) in the module that first asked for it. Under pytest-xdist the
modules run side by side, so the total is summed over the workers (and says so): the run's
own wall time is pytest's last line. Every module's time goes to `build/test-times.tsv`
(seconds, tests, module; slowest first), and the time per top-level test directory is
printed: where to look when the suite nears CI's 45 minutes.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

SHOWN = 15
TSV = Path(__file__).resolve().parents[2] / "build" / "test-times.tsv"


class ModuleTimes:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.tests: dict[str, int] = defaultdict(int)
        self.workers: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        module = report.nodeid.split("::", 1)[0]
        self.seconds[module] += report.duration
        node = getattr(report, "node", None)        # pytest-xdist: the worker that ran it
        if node is not None:
            self.workers.add(str(getattr(getattr(node, "gateway", None), "id", node)))
        if report.when == "call" or (report.when == "setup" and report.skipped):
            self.tests[module] += 1

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.seconds:
            return
        total = sum(self.seconds.values())
        slowest = sorted(self.seconds.items(), key=lambda kv: -kv[1])[:SHOWN]
        summed = f", summed over {len(self.workers)} workers" if len(self.workers) > 1 else ""
        terminalreporter.write_sep("=", f"slowest {len(slowest)} of {len(self.seconds)} modules "
                                        f"(wall time of their tests, {total / 60:.1f} min in all{summed})")
        for module, seconds in slowest:
            terminalreporter.write_line(f"{seconds:8.1f}s {self.tests[module]:5d} tests  {module}")
        by_dir: dict[str, float] = defaultdict(float)
        for module, seconds in self.seconds.items():
            by_dir["/".join(module.split("/")[:2])] += seconds
        terminalreporter.write_line("by directory: " + ", ".join(
            f"{d} {s / 60:.1f} min" for d, s in sorted(by_dir.items(), key=lambda kv: -kv[1])))
        try:
            TSV.parent.mkdir(exist_ok=True)
            TSV.write_text("".join(f"{s:.1f}\t{self.tests[m]}\t{m}\n"
                                   for m, s in sorted(self.seconds.items(), key=lambda kv: -kv[1])))
        except OSError as exc:              # a read-only checkout still gets its summary
            terminalreporter.write_line(f"(module times not written: {exc})")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ModuleTimes(), "kgroup-module-times")
