"""Spark's own Kafka connector (spark-sql-kafka-0-10) beside format("kgroup").

``make spark`` copies the connector's jars from Maven Central into ``spark/lib`` of the
checkout (``spark/pom.xml``); a SparkSession that should also have format("kafka") gets
them with ``spark.jars`` when it is built::

    builder.config("spark.jars", ",".join(kafka_connector_jars()))

The tests and ``bench/spark_io.py`` run both connectors in one session, on the same broker,
so their figures compare the connectors and nothing else. ``KGROUP_SPARK_KAFKA_LIB`` points
at another folder of the jars.
"""

from __future__ import annotations

import os
from pathlib import Path

LIB_ENV = "KGROUP_SPARK_KAFKA_LIB"
CONNECTOR = "spark-sql-kafka-0-10_2.13-"


def kafka_connector_lib() -> Path | None:
    """The folder of the connector's jars, or None when ``make spark`` has not put them."""
    if os.environ.get(LIB_ENV):
        candidates = [Path(os.environ[LIB_ENV])]
    else:
        here = Path.cwd().resolve()
        candidates = [base / "spark" / "lib"
                      for base in (Path(__file__).resolve().parents[3], here, *here.parents)]
    for lib in candidates:
        if lib.is_dir() and any(p.name.startswith(CONNECTOR) for p in lib.glob("*.jar")):
            return lib
    return None


def kafka_connector_unavailable() -> str | None:
    """Why format("kafka") cannot be added here, or None when it can."""
    if kafka_connector_lib() is None:
        return ("Spark's Kafka connector (spark-sql-kafka-0-10) is not installed: run `make spark` "
                f"(or set {LIB_ENV} to a folder with its jars)")
    return None


def kafka_connector_jars() -> list[str]:
    """Every jar of the connector (for ``spark.jars``); [] when it is not installed."""
    lib = kafka_connector_lib()
    return sorted(str(p) for p in lib.glob("*.jar")) if lib is not None else []
