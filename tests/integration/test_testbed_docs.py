"""docs/testing.md runs as written from a clone: its shell blocks, in order, with
test_readme.py's machinery (set-up lines -- make, npm ci, pip install -- are what this
checkout already has). They start a broker with the control API, run the pytest example
(examples/testing, with the plugin's fixtures) and the kafkajs one (with the kafkajs
package.json pins) against it, start a `kgroup cluster` and drive it with `kgroup control`.
The doc's ports (9092-9094, 9192-9194) and /tmp dirs become free ones of this test. The
doc also quotes each example's code unchanged."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_readme import blocks_of, script
from kgroup.testing.ports import free_run
from tests.integration.waits import wait_for

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"
EXAMPLES = ROOT / "examples" / "testing"
# What a clone has that the blocks use (they write their logs and pid files beside them).
CLONE = (".venv", "examples", "tests", "pyproject.toml", "package.json", "package-lock.json", "node_modules")


def _ports() -> dict[str, str]:
    """The doc's ports -> free ones: a run of three for the brokers, one for the controls."""
    brokers, controls = free_run(3), free_run(3)       # held runs never overlap
    return {str(9092 + i): str(brokers + i) for i in range(3)} | {str(9192 + i): str(controls + i) for i in range(3)}


def _stop_started(work: Path) -> None:
    """Stop what the blocks started in the background and may have left running."""
    for pid_file in work.glob("*.pid"):
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
                 .lower(), 30, what=f"pid {pid} ({pid_file.name}) to stop")


@pytest.mark.timeout(900)
def test_every_shell_block_runs_in_order(tmp_path):
    work = tmp_path / "clone"
    work.mkdir()
    for name in CLONE:
        if (ROOT / name).exists():
            (work / name).symlink_to(ROOT / name)
    ports = _ports()
    node = shutil.which("node") is not None and (ROOT / "node_modules" / "kafkajs").is_dir()
    blocks = blocks_of(DOC)
    assert [b.lang for b in blocks if b.lang not in ("python", "js", "go", "json", "text", "sh")] == []
    ran = []
    try:
        for block in blocks:
            if block.lang == "json":
                json.loads(block.text)
                continue
            if block.lang != "sh":
                continue            # python: fixtures' usage and the examples (run by pytest here); js, go: sketches
            text = re.sub(r"\b(9092|9093|9094|9192|9193|9194)\b", lambda m: ports[m.group(1)], block.text)
            text = text.replace("/tmp/kgroup-", f"{tmp_path}/kgroup-")
            if not node:            # Node absent (make test installs the Node clients only where it is)
                text = "\n".join(line for line in text.splitlines() if "node --test" not in line)
            done = subprocess.run(["bash", "-c", script(text)], cwd=work, capture_output=True, text=True,
                                  timeout=600, env=dict(os.environ))
            assert done.returncode == 0, (f"{block} failed with {done.returncode}:\n{text}\n--- stdout\n"
                                          f"{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
            assert "Traceback" not in done.stderr, f"{block}:\n{done.stderr[-3000:]}"
            ran.append((block, done.stdout + done.stderr))
    finally:
        _stop_started(work)
    out = "\n".join(o for _, o in ran)
    # The blocks did what they say.
    assert "3 passed" in out and "Unknown config option" not in out
    assert not node or "# pass 1" in out
    assert "bootstrap servers" in out and re.search(r"REBALANCE_IN_PROGRESS", out)
    assert "fault" in (work / "kgroup-test.log").read_text()


def test_the_example_needs_no_pytest_plugin_beyond_pytest():
    """Run as the doc says with only pytest installed (pytest-timeout off here), the example
    draws no warning about kgroup's own pytest settings (`timeout`)."""
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:timeout", "-p", "no:cacheprovider", "examples/testing"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "3 tests collected" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Unknown config option" not in done.stdout + done.stderr


def test_the_docs_show_the_examples_as_they_are():
    doc = (ROOT / "docs" / "testing.md").read_text()
    for example in ("orders_app.py", "test_orders_app.py", "kafkajs/orders.test.mjs"):
        code = (EXAMPLES / example).read_text()
        # The doc quotes each example's code from its first import on, unchanged.
        start = next(i for i, line in enumerate(code.splitlines()) if line.startswith(("from ", "import ")))
        body = "\n".join(code.splitlines()[start:])
        assert body in doc, f"docs/testing.md does not show {example} as it is"
