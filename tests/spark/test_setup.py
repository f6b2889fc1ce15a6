"""What Spark needs from the machine: the workers' Python (register) and Java 17."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from kgroup.spark.setup import SparkSetupError, java_problem, workers_python

SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no system python3 to stand for a worker Python without kgroup")
def test_register_gives_the_workers_this_python_when_theirs_lacks_kgroup(spark, monkeypatch):
    sc = spark.sparkContext
    monkeypatch.setattr(sc, "pythonExec", SYSTEM_PYTHON)      # what Spark starts without PYSPARK_PYTHON
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    workers_python(spark)
    assert sc.pythonExec == sys.executable and os.environ["PYSPARK_PYTHON"] == sys.executable
    # Set explicitly to a Python without kgroup: refused with what to set.
    monkeypatch.setattr(sc, "pythonExec", SYSTEM_PYTHON)
    monkeypatch.setenv("PYSPARK_PYTHON", SYSTEM_PYTHON)
    with pytest.raises(SparkSetupError, match="cannot import kgroup.*set PYSPARK_PYTHON"):
        workers_python(spark)


def test_java_17_is_found_or_missing_in_one_line(monkeypatch, tmp_path):
    assert java_problem() is None                            # make test needs Java 17 here
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert java_problem() == "Spark needs Java 17: no java on the PATH and JAVA_HOME is not set"
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert "has no bin/java" in java_problem()
