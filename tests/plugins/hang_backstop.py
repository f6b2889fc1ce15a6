"""A backstop for a test that pytest-timeout cannot end.

pytest-timeout (300 s, or a test's own `timeout` mark) ends a test from SIGALRM's handler,
which only runs when the main thread is back in the interpreter. A test blocked where that
never happens ends nothing, and CI hangs to its own limit with nothing said: a Spark lag
test once hung 46 minutes under load with pytest-timeout set to 300 s.

This plug-in starts a watchdog thread with each test. If the test is still running
`kgroup_hang_grace` seconds (120) after its timeout, the watchdog prints every thread's
stack, stops the suite's child processes (brokers, the reference Kafka, client programs)
and ends the process. Under pytest-xdist the controller then reports that worker's crash as
the test's failure and goes on with a new worker. Should the main thread also hold the GIL
for ever, faulthandler's C watchdog does the same a minute later, without the reaping.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from typing import Iterator

import pytest

LAST_RESORT = 60.0          # seconds after the watchdog, for faulthandler's own exit


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("kgroup_hang_grace", "seconds past a test's timeout before the hang "
                  "backstop dumps every stack and ends the process (0: off)", default="120")


def _timeout(item: pytest.Item) -> float:
    """The test's pytest-timeout: its mark, else --timeout, else the ini value (0: none)."""
    mark = item.get_closest_marker("timeout")
    if mark is not None and (mark.args or "timeout" in mark.kwargs):
        value = mark.args[0] if mark.args else mark.kwargs["timeout"]
    else:
        value = item.config.getoption("timeout", None)
        if value is None:
            try:
                value = item.config.getini("timeout")
            except ValueError:      # pytest-timeout is not installed: no timeout to back up
                value = 0
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def _end(item: pytest.Item, after: float) -> None:
    nodeid = item.nodeid
    out = errs = ""
    capture = item.config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        try:                        # fd 2 back from the capture file, and what the test wrote
            capture.suspend_global_capture(in_=True)
            out, errs = capture.read_global_capture()
        except Exception:
            pass
    err = sys.__stderr__
    for title, text in (("stdout", out), ("stderr", errs)):
        if text:
            err.write(f"\n+++ {nodeid}: captured {title} +++\n{text}")
    err.write(f"\n+++ kgroup hang backstop: {nodeid} still running {after:g}s after it began, "
              "past its pytest-timeout; every thread's stack, then its children are stopped "
              "and this process ends +++\n")
    err.flush()
    faulthandler.dump_traceback(file=err, all_threads=True)
    children = sys.modules.get("kgroup.testing.process")
    if children is not None:
        try:
            stopped = children.reap_all(5.0)
            err.write(f"+++ stopped: {', '.join(stopped) or 'no child process'} +++\n")
        except Exception as exc:  # the process ends regardless
            err.write(f"+++ stopping the children failed: {exc!r} +++\n")
    err.flush()
    os._exit(3)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    grace = float(item.config.getini("kgroup_hang_grace") or 0)
    timeout = _timeout(item)
    if grace <= 0 or timeout <= 0:
        yield
        return
    after = timeout + grace
    watchdog = threading.Timer(after, _end, (item, after))
    watchdog.daemon = True
    watchdog.name = "kgroup-hang-backstop"
    watchdog.start()
    faulthandler.dump_traceback_later(after + LAST_RESORT, exit=True, file=sys.__stderr__)
    try:
        yield
    finally:
        watchdog.cancel()
        faulthandler.cancel_dump_traceback_later()
