"""The benchmarks still run: a tiny run of the ones that drive the coordinator's heartbeat
paths, which broke twice unnoticed (a broker config key written twice, a private method's
new argument). Figures are not checked here (a test never asserts wall-clock time); the
run must end well, and the TCP one without an error response."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_streams_groups_core_benchmark_runs():
    out = _bench("bench/streams_groups.py", "--members", "4", "--tasks", "8", "--standbys", "1",
                 "--runs", "1", "--seconds", "0.2")
    assert "streams: heartbeats/s" in out and "streams: assignor, full, ms" in out


def test_the_streams_groups_tcp_benchmark_runs_against_kgroup_serve():
    out = _bench("bench/streams_groups_tcp.py", "--members", "4", "--subtopologies", "1", "--tasks", "8",
                 "--seconds", "0.5", "--runs", "1", "--warmup", "0", "--connections", "2", "--window", "4")
    assert "| streams: error responses (all runs) | 0 |" in out
    assert "| consumer: error responses (all runs) | 0 |" in out
