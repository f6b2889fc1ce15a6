"""What Spark needs from this machine, checked up front with one clear line when it is missing.

``java_problem()``: Spark 4 runs on Java 17 or newer, found through ``JAVA_HOME`` or ``java``
on the PATH, as Spark's launch scripts look for it. ``workers_python(spark)``: the Python
the Spark workers start (``PYSPARK_PYTHON``, else ``python3``) must import kgroup to run the
kgroup source and sink; on a local master a worker Python that cannot is replaced by this
one, and an explicit ``PYSPARK_PYTHON`` that cannot is refused with what to set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any

JAVA_VERSION = 17


class SparkSetupError(RuntimeError):
    """Spark cannot run here as set up; the message says what to install or set."""


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        exe = os.path.join(home, "bin", "java")
        return exe if os.access(exe, os.X_OK) else None
    return shutil.which("java")


def java_problem() -> str | None:
    """None when a Java 17+ is found, else what is wrong (one line)."""
    exe = _java()
    if exe is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") \
            else "no java on the PATH and JAVA_HOME is not set"
        return f"Spark needs Java {JAVA_VERSION}: {where}"
    try:
        out = subprocess.run([exe, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"Spark needs Java {JAVA_VERSION}: {exe} does not run ({exc})"
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        return None                               # an unusual banner: let Spark try
    major = int(m.group(2)) if m.group(1) == "1" else int(m.group(1))
    if major < JAVA_VERSION:
        return f"Spark needs Java {JAVA_VERSION} or newer; {exe} is Java {major}"
    return None


def require_java() -> None:
    """Raise SparkSetupError when java_problem() finds one."""
    problem = java_problem()
    if problem is not None:
        raise SparkSetupError(problem)


def _imports_kgroup(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import kgroup"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def workers_python(spark: Any) -> None:
    """Make the workers of a local SparkSession run a Python that has kgroup."""
    sc = spark.sparkContext
    if not str(sc.master).startswith("local"):
        return                                    # a cluster's executors: the operator's setup
    current = sc.pythonExec
    if current == sys.executable or _imports_kgroup(current):
        return
    if os.environ.get("PYSPARK_PYTHON"):
        raise SparkSetupError(
            f"PYSPARK_PYTHON={os.environ['PYSPARK_PYTHON']} cannot import kgroup, so Spark's workers cannot "
            f"run the kgroup source; set PYSPARK_PYTHON to a Python with kgroup installed, e.g. {sys.executable}")
    sc.pythonExec = sys.executable
    os.environ["PYSPARK_PYTHON"] = sys.executable  # and for sessions created later in this process
