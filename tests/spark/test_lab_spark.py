"""``kgroup lab sweep`` on a real local Spark: same rows on one core and on two."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lab"


def sweep(master: str, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    exe = str(Path(sys.executable).with_name("kgroup"))
    return subprocess.run([exe, "lab", "sweep", str(EXAMPLES / "crash-sweep.yaml"), "--out", str(out),
                           "--master", master, "--partitions", "5"],
                          capture_output=True, text=True, timeout=600, env=env)


def rows(path: Path) -> list[dict]:
    return sorted(pq.read_table(path).to_pylist(), key=lambda r: (r["group"], r.get("start_s") or 0))


@pytest.fixture
def lab_on_shared_spark(spark, monkeypatch):
    """`kgroup lab ... --master` run in this process gets the tests' shared local[2] session
    instead of a Spark of its own (~45 s each), and leaves it running when the command ends."""
    from kgroup.cli import lab as lab_cli

    monkeypatch.setattr(lab_cli, "_spark_session", lambda master: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    return spark


def test_a_sweep_gives_identical_numbers_on_one_core_and_on_two(lab_on_shared_spark, tmp_path, capsys):
    """One core: `kgroup lab sweep --master local[1]`, a process and a Spark of its own.
    Two: the same command in this process on the tests' shared local[2] session (a second
    Spark of its own per run cost ~45 s of the suite for the same comparison)."""
    from kgroup.cli.main import main

    one = sweep("local[1]", tmp_path / "one")
    assert one.returncode == 0, one.stderr[-3000:]
    assert lab_on_shared_spark.sparkContext.defaultParallelism == 2
    capsys.readouterr()
    assert main(["lab", "sweep", str(EXAMPLES / "crash-sweep.yaml"), "--out", str(tmp_path / "two [2]"),
                 "--master", "local[2]", "--partitions", "5"]) == 0   # glob characters in --out are just a name
    assert "lab: 12/12 groups simulated" in capsys.readouterr().err
    # Progress was shown while it ran, and the comparison table printed at the end.
    assert "lab: 12/12 groups simulated" in one.stderr
    assert "consumer-protocol" in one.stdout and "double_ownership" in one.stdout
    groups_one, groups_two = rows(tmp_path / "one" / "groups.parquet"), rows(tmp_path / "two [2]" / "groups.parquet")
    assert len(groups_one) == 12 and groups_one == groups_two
    assert rows(tmp_path / "one" / "windows.parquet") == rows(tmp_path / "two [2]" / "windows.parquet")
    comparison = {r["variant"]: r for r in pq.read_table(tmp_path / "one" / "comparison.parquet").to_pylist()}
    assert set(comparison) == {"dynamic-eager", "static", "cooperative", "consumer-protocol"}
    assert all(r["groups"] == 3 and r["double_ownership"] == 0 and r["offset_regressions"] == 0
               for r in comparison.values())
    assert (tmp_path / "one" / "report.html").read_text().count('<svg class="plot"') >= 6


def test_a_replay_of_many_groups_on_spark_gives_the_rows_of_the_replay_here(lab_on_shared_spark, tmp_path, capsys):
    """`kgroup lab replay --master`: every group of a recording, each as recorded and as a
    variant, simulated in Spark tasks — the same rows as the replay without Spark. In this
    process, on the tests' own SparkSession (a Spark of its own per run costs ~45 s; the
    sweep test above runs one `--master` in a process of its own)."""
    import json

    from kgroup.cli.main import main
    from tests.lab.test_recorded import rolling_restart_recording

    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for g in ("billing", "shipping", "audit")
                              for e in rolling_restart_recording(g))
                      + json.dumps(rolling_restart_recording("commits-only")[0]) + "\n")   # a join, no assignment
    runs = {}
    for where, extra in (("here", []), ("spark", ["--master", "local[2]"])):
        capsys.readouterr()
        assert main(["lab", "replay", str(events), "--as", "static=true",
                     "--out", str(tmp_path / where), *extra]) == 0
        done = capsys.readouterr()
        assert "3 groups replayed" in done.out and "static=true" in done.out
        assert "skipped group 'commits-only': no assignment" in done.err
        runs[where] = {(r["group"], r["variant"]): (r["rebalances"], r["moved"], r["unowned_partition_s"])
                       for r in pq.read_table(tmp_path / where / "groups.parquet").to_pylist()}
    assert len(runs["here"]) == 6 and runs["here"] == runs["spark"]
