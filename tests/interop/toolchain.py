"""The programs the interop tests drive, built once per checkout by the Makefile: the Java
worker (tests/java, compiled with javac against the Kafka 4.4 jars of `make reference`) and
the Go programs (tests/go, built with the machine's Go from the modules go.mod/go.sum pin).

`build("java")` / `build("go")` runs the Makefile's target (a stamp: compiled once, again only
when a source changes) and answers the build's folder. Where the toolchain is missing the test
is skipped with the reason — or fails under KGROUP_REQUIRE_REFERENCE=1 (`make test` sets it),
so CI never skips them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kgroup.testing.reference import REQUIRE_ENV, reference_unavailable

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
TARGETS = {"java": ("java-clients", BUILD / "java"), "go": ("go-clients", BUILD / "go")}


def missing(kind: str) -> str | None:
    """Why the `kind` programs cannot be built here, or None."""
    if shutil.which("make") is None:
        return "make is not installed"
    if kind == "java":
        if shutil.which("javac") is None:
            return "the Java clients need a JDK 17+ (javac), and none is on PATH"
        return reference_unavailable()
    if shutil.which("go") is None:
        return "the Go clients need Go (1.23+), and `go` is not on PATH"
    return None


def unavailable(why: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{why} ({REQUIRE_ENV}=1: the interop tests must run)", pytrace=False)
    pytest.skip(why)


def build(kind: str) -> Path:
    """Build (when stale) and answer the folder of the `kind` programs; skip or fail if we can't."""
    why = missing(kind)
    if why:
        unavailable(why)
    target, folder = TARGETS[kind]
    done = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"`make {target}` failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}", pytrace=False)
    return folder
