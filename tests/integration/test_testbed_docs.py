"""docs/testing.md's examples run as written: the pytest example (examples/testing) with the
plugin's fixtures, and the kafkajs one (examples/testing/kafkajs) against a broker's control
API over HTTP, with the kafkajs that package.json pins (`npm ci`, which make test runs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kgroup.testing import Broker

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "testing"


def test_the_pytest_example_passes():
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLES)],
                          cwd=EXAMPLES, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout[-5000:] + done.stderr[-2000:]


def test_the_docs_show_the_examples_as_they_are():
    doc = (ROOT / "docs" / "testing.md").read_text()
    for example in ("orders_app.py", "test_orders_app.py", "kafkajs/orders.test.mjs"):
        code = (EXAMPLES / example).read_text()
        # The doc quotes each example's code from its first import on, unchanged.
        start = next(i for i, line in enumerate(code.splitlines()) if line.startswith(("from ", "import ")))
        body = "\n".join(code.splitlines()[start:])
        assert body in doc, f"docs/testing.md does not show {example} as it is"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed here")
def test_the_kafkajs_example_passes(tmp_path):
    assert (ROOT / "node_modules" / "kafkajs").is_dir(), "kafkajs is not installed: run `npm ci` (make test does)"
    with Broker(tmp_path / "broker") as broker:
        env = dict(os.environ, KAFKA_BOOTSTRAP=broker.bootstrap, KGROUP_CONTROL=broker.control_address)
        done = subprocess.run(["node", "--test", str(EXAMPLES / "kafkajs" / "orders.test.mjs")], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "# pass 1" in done.stdout, done.stdout[-5000:] + done.stderr[-2000:]
        assert "fault" in broker.log() and "ILLEGAL_GENERATION" in broker.log()
