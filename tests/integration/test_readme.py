"""Every code block of README.md and of the docs it links runs as written, in order.

docs/testing.md is the exception: test_testbed_docs.py runs its shell blocks in order with
this module's machinery (they start brokers and a cluster of their own, on ports it picks)
and checks the doc quotes the examples unchanged; its Go and JavaScript sketches are not run.

The test plays a new user after `make run`: it starts a broker of its own (with the
defaults `make run` uses, the 3 s initial rebalance delay included) and runs each block in
turn, in a scratch directory that sees the checkout's `.venv` and `examples` (the blocks of
a few independent sections, `LANES`, in turn on threads of their own beside the others):
- ``sh`` blocks run in bash, stopping at the first failing command (``set -e``);
  ``make ...``, ``npm ci ...`` and ``.venv/bin/pip install ...`` lines are set-up whose
  result the test's own venv, node_modules and broker already are (`SETUP`);
- ``python`` blocks run as programs with the venv's Python, and must finish;
- ``toml`` blocks must load as a broker config, ``json`` blocks parse, ``yaml`` blocks load
  as a lab scenario or sweep; ``text`` blocks are samples of output (a log), not run;
- ``kgroup groups watch`` draws on a terminal until ``q``: it runs in a pseudo-terminal,
  and once it has drawn the group, ``q`` is pressed and it must exit 0.
The broker's address replaces 127.0.0.1:9092 in the blocks and is KGROUP_BOOTSTRAP for the
commands that default to it, so a broker on 9092 elsewhere on the machine is never touched.
The README's other brokers (a cluster on 19092-19094, a SASL_SSL broker on 9093) get ports
the test holds in their place (`FIXED_PORTS`), so two suites on one machine never meet there.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kgroup.broker.config import load_config
from kgroup.lab.scenario import parse_scenario
from kgroup.lab.sweep import parse_sweep
from kgroup.testing.ports import free_port, free_run
from tests.integration.broker_process import BrokerProcess

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)#]+\.md)\)")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    text: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks_of(path: Path) -> list[Block]:
    text = path.read_text()
    return [Block(path, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in FENCE.finditer(text)]


# Lines that install what the test's checkout already has (and must not reinstall into the
# shared .venv or node_modules).
SETUP = ("make ", "npm ci", ".venv/bin/pip install ")


def script(text: str) -> str:
    """A ``sh`` block as a bash script that stops at the first failing command, set-up lines
    left out."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(SETUP)]
    return "set -euo pipefail\n" + "\n".join(lines) + "\n"


# Linked docs whose examples have a test of their own (it runs the example files and checks
# that the doc shows them as they are), with blocks in languages this test does not run.
OWN_TESTS = {ROOT / "docs" / "testing.md": "tests/integration/test_testbed_docs.py"}


def documents() -> list[Path]:
    """README.md, then the local docs it links, in the order of their first link (but for
    those in OWN_TESTS)."""
    readme = ROOT / "README.md"
    linked = []
    for target in LINK.findall(readme.read_text()):
        doc = (ROOT / target).resolve()
        if doc.is_file() and doc not in linked and doc != readme and doc not in OWN_TESTS:
            linked.append(doc)
    return [readme, *linked]


ALL_BLOCKS = [b for doc in documents() for b in blocks_of(doc)]


def test_the_readme_has_blocks_of_every_kind_we_run():
    kinds = {b.lang for b in ALL_BLOCKS}
    assert {"sh", "python", "toml", "json", "yaml"} <= kinds, kinds
    assert not kinds - {"sh", "python", "toml", "json", "yaml", "text"}, "a block of a kind this test cannot check"
    assert len(documents()) >= 2


def test_set_up_lines_install_what_pyproject_pins():
    """What a doc tells a user to pip install is what the tests install (pyproject's test
    extra), at the same pinned versions."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    extra = pyproject[pyproject.index("test = ["):]
    extra = extra[:extra.index("]\n")]
    pins = dict(re.findall(r'"([A-Za-z0-9_.\-\[\]]+?)(?:[=<>~!]=?([^"]*))?"', extra))
    docs = [*documents(), *OWN_TESTS]
    installs = [line for doc in docs for b in blocks_of(doc) if b.lang == "sh"
                for line in b.text.splitlines() if line.lstrip().startswith(".venv/bin/pip install ")]
    assert installs
    for line in installs:
        for spec in line.split("#", 1)[0].split()[3:]:
            name, _, version = spec.partition("==")
            assert name in pins, f"{line!r}: {name} is not in pyproject's test extra"
            assert not version or version == pins[name], f"{line!r}: pyproject pins {name}=={pins[name]}"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("readme") / "data",
                         group={"initial_rebalance_delay_ms": 3000}).start()   # make run's default
    yield proc
    proc.finish()


def _scratch(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    for name in (".venv", "examples"):
        (work / name).symlink_to(ROOT / name)
    return work


def _check_data(block: Block, text: str, tmp_path: Path) -> None:
    if block.lang == "toml":
        config_file = tmp_path / f"readme-{block.line}.toml"
        config_file.write_text(text)
        load_config(str(config_file))
    elif block.lang == "json":
        json.loads(text)
    elif block.lang == "yaml":
        data = yaml.safe_load(text)
        if "scenario" in data or "base" in data:
            parse_sweep(text, source=str(block), read=lambda p: (ROOT / "examples" / "lab" / p).read_text())
        else:
            parse_scenario(text, source=str(block))


WATCH = "kgroup groups watch"


def _watch(block: Block, text: str, work: Path, env: dict) -> None:
    """Run a `groups watch` block in a pseudo-terminal, read its screen, press q."""
    (line,) = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    command = line.split("#", 1)[0].split()
    group = command[command.index("watch") + 1]
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, cwd=work, env={**env, "TERM": "xterm", "COLUMNS": "160", "LINES": "50"},
                            stdin=follower, stdout=follower, stderr=follower, start_new_session=True)
    os.close(follower)
    screen = b""
    deadline = time.monotonic() + 60
    try:
        while group.encode() not in screen and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                screen += os.read(leader, 65536)
        assert group.encode() in screen, f"{block}: the screen never showed {group}:\n{screen[-2000:]!r}"
        os.write(leader, b"q")
        assert proc.wait(30) == 0, f"{block}: watch did not quit on q:\n{screen[-2000:]!r}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)


# Lanes: blocks that need nothing the main sequence does after their lane starts, and that
# nothing later in it needs, run in order on a thread of their own beside it, so their waits
# (Spark sessions starting, a demo that runs 25 s) overlap the others'. Every block still
# runs and is checked as in the main sequence. A lane starts once the main sequence has run
# the block holding `starts_after`, or when it reaches the lane's first block; a block
# belongs to the first lane one of whose `marks` it holds.
@dataclass(frozen=True)
class Lane:
    name: str
    marks: tuple[str, ...]
    starts_after: str | None = None


# The group tools' blocks (`groups describe --all-groups`, `groups list --type share`) run
# before the lanes with groups on the main broker start, so they list the groups they did.
AFTER_THE_GROUP_TOOLS = "groups reset-offsets --group workers"
LANES = (
    Lane("cluster", ("--base-port 19092",)),                      # a cluster of its own, on its own ports
    Lane("secure", ("kgroup-secure", "127.0.0.1:9093", "secure.pid")),   # a SASL_SSL broker of its own
    # Spark reads `orders` once the quick start has filled it; its groups and the records it
    # writes to `orders-upper` are its own (the transactional example's are checked by nothing).
    # The lab's sweep (virtual time, no broker) is on Spark too: one Spark at a time, as two
    # local sessions on a loaded 2-core machine starve each other's Python workers.
    Lane("spark", ("SparkSession", "examples/spark/", "groups describe orders-job",
                   "lab sweep examples/lab/rolling-bounce-sweep.yaml"), starts_after="topics create orders"),
    Lane("membership", ("examples/membership/", "examples/assignors/"), starts_after=AFTER_THE_GROUP_TOOLS),
)


def lane_of(block: Block) -> Lane | None:
    if block.lang not in ("sh", "python"):
        return None
    return next((lane for lane in LANES if any(mark in block.text for mark in lane.marks)), None)


# The fixed ports of the README's own cluster and secure broker, as a user would type them.
FIXED_PORTS = re.compile(r"\b(19092|19093|19094|9093)\b")


def _held_ports() -> dict[str, str]:
    """A port this test holds for each of `FIXED_PORTS` (the cluster's three in a row, as
    `kgroup cluster --base-port` counts up from the first)."""
    cluster, secure = free_run(3), free_port()
    return {"19092": str(cluster), "19093": str(cluster + 1), "19094": str(cluster + 2), "9093": str(secure)}


# Spark's own message when a Python worker it started did not connect back within 10 s.
SPARK_WORKER_LATE = "Timed out while waiting for the Python worker to connect back"


def _run_block(block: Block, broker, work: Path, env: dict, tmp_path: Path, ports: dict[str, str]) -> str | None:
    """Run or check one block; its stdout if it ran as a program."""
    text = FIXED_PORTS.sub(lambda m: ports[m.group(1)], block.text.replace("127.0.0.1:9092", broker.bootstrap))
    if block.lang in ("toml", "json", "yaml"):
        _check_data(block, text, tmp_path)
        return None
    if block.lang == "text":
        return None
    if block.lang == "sh" and WATCH in text:
        _watch(block, text, work, env)
        return None
    if block.lang == "sh":
        cmd = ["bash", "-c", script(text)]
    else:
        program = work / f"block-{block.path.stem}-{block.line}.py"
        program.write_text(text)
        cmd = [sys.executable, str(program)]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and SPARK_WORKER_LATE in done.stderr:
        # Spark waits a fixed 10 s (PythonWorkerFactory.createSimpleWorker, not configurable)
        # for a new Python worker to connect back; with every lane of this test running on
        # two cores, the worker's start alone can take longer. Nothing of ours ran yet: once
        # more, and any other failure (or the same again) fails the test.
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (f"{block} failed with {done.returncode}:\n{text}\n--- stdout\n"
                                  f"{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
    assert "Traceback" not in done.stderr, f"{block}:\n{done.stderr[-3000:]}"
    return done.stdout


def test_every_port_a_block_listens_on_or_dials_is_the_brokers_or_held_by_the_test():
    """A fixed port the README adds later must join `FIXED_PORTS`, or two suites meet on it."""
    named = re.compile(r"(?:127\.0\.0\.1:|--base-port |--control-base-port )(\d+)")
    fixed = {port for b in ALL_BLOCKS if b.lang in ("sh", "python") for port in named.findall(b.text)}
    assert fixed, "no block names a port: the pattern is stale"
    assert all(FIXED_PORTS.fullmatch(p) for p in fixed - {"9092"}), fixed


def test_every_lane_has_blocks_and_starts_where_it_says():
    for lane in LANES:
        mine = [i for i, b in enumerate(ALL_BLOCKS) if lane_of(b) == lane]
        assert mine, f"lane {lane.name}: no block holds any of {lane.marks}"
        if lane.starts_after:
            assert any(lane.starts_after in b.text and lane_of(b) is None for b in ALL_BLOCKS[:mine[0]]), \
                f"lane {lane.name}: no block of the main sequence before its first holds {lane.starts_after!r}"


@pytest.mark.timeout(1800)      # every example: Spark, a lab sweep, the membership demos
def test_every_block_runs_in_order(broker, tmp_path):
    work = _scratch(tmp_path)
    ports = _held_ports()
    env = dict(os.environ, KGROUP_BOOTSTRAP=broker.bootstrap)
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(key, None)                         # as a user has it: register() must cope
    outputs: dict[str, str] = {}
    failures: list[BaseException] = []
    threads: dict[str, threading.Thread] = {}

    def run_lane(blocks: list[Block]) -> None:
        try:
            for block in blocks:
                out = _run_block(block, broker, work, env, tmp_path, ports)
                if out is not None:
                    outputs[str(block)] = out
        except BaseException as exc:               # noqa: BLE001 — raised again after the join
            failures.append(exc)

    def start(lane: Lane) -> None:
        if lane.name not in threads:
            blocks = [b for b in ALL_BLOCKS if lane_of(b) == lane]
            threads[lane.name] = threading.Thread(target=run_lane, args=(blocks,), name=f"readme-{lane.name}")
            threads[lane.name].start()

    try:
        for block in ALL_BLOCKS:
            lane = lane_of(block)
            if lane is not None:
                start(lane)
                continue
            if failures:
                break
            out = _run_block(block, broker, work, env, tmp_path, ports)
            if out is not None:
                outputs[str(block)] = out
            for lane in LANES:
                if lane.starts_after and lane.starts_after in block.text:
                    start(lane)
    finally:
        for thread in threads.values():
            thread.join()
    if failures:
        raise failures[0]
    assert set(threads) == {lane.name for lane in LANES}
    # The blocks did what they say: a few of their outputs, checked.
    assert any("records in orders-upper" in out for out in outputs.values())
    assert (work / "lab-run" / "report.html").is_file() and (work / "lab-replay" / "report.html").is_file()
    assert (work / "plan.csv").read_text().startswith("orders,")
    # The Spark examples, run as the README shows them (tests/spark/test_examples.py checks
    # what their functions compute, in a session of its own).
    copied = [re.search(r"orders-parquet/data holds (\d+) records of orders", out) for out in outputs.values()]
    assert any(m and int(m.group(1)) > 0 for m in copied), "topic_to_parquet.py copied nothing"
    import pyarrow.parquet as pq
    assert pq.read_table(work / "rebalance-analytics" / "groups.parquet").num_rows > 0
    assert pq.read_table(work / "rebalance-analytics" / "rebalances.parquet").num_rows > 0
    # The rolling restart's replay (README's lab section), its figures checked against what
    # the broker recorded (tests/integration/test_readme_replay.py).
    from tests.integration.test_readme_replay import check_replay_run, replay_blocks
    check_replay_run(work, outputs[str(replay_blocks()[1])])
