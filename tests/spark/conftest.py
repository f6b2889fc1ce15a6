"""Fixtures of the Spark tests: one real `kgroup serve` and one local Spark for the session.

Spark starts slowly (a JVM, Python workers), so every test shares one SparkSession
(local[2], no UI, few shuffle partitions) with format("kgroup") registered and Spark's own
format("kafka") on its classpath (spark-sql-kafka-0-10, from `make spark`), and one broker
on a free loopback port; tests keep to topics and groups of their own. ``any_broker`` runs a
test on that kgroup and on the session's Apache Kafka 4.4 (``kafka_reference``).
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.integration.broker_process import BrokerProcess, free_port

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """A `kgroup serve` for the whole session, with its console (``http_listen``); stopped
    (and checked) at the end."""
    console = free_port()
    proc = BrokerProcess(tmp_path_factory.mktemp("spark-broker") / "data",
                         extra={"http_listen": f"127.0.0.1:{console}"}).start()
    proc.console = f"http://127.0.0.1:{console}"
    yield proc
    proc.finish()


@pytest.fixture(scope="session")
def spark():
    from pyspark.java_gateway import ensure_callback_server_started
    from pyspark.sql import SparkSession

    import kgroup.spark
    from kgroup.spark.connector import kafka_connector_jars

    session = (SparkSession.builder.master("local[2]").appName("kgroup-spark-tests")
               .config("spark.jars", ",".join(kafka_connector_jars()))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    # py4j's callback server (foreachBatch, listeners) waits on select(), which fails for
    # a descriptor past 1023: open its socket now, while the worker holds few.
    ensure_callback_server_started(session.sparkContext._gateway)
    kgroup.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(params=["kgroup", "kafka"])
def any_broker(request):
    """The session's kgroup, then the session's Apache Kafka 4.4 (both have ``bootstrap``)."""
    return request.getfixturevalue("broker" if request.param == "kgroup" else "kafka_reference")


@pytest.fixture(scope="session")
def kafka_connector():
    """Spark's own format("kafka") is on the session's classpath, or the test skips (fails
    under KGROUP_REQUIRE_REFERENCE=1, as `make test` sets)."""
    from kgroup.spark.connector import kafka_connector_unavailable
    from kgroup.testing.reference import REQUIRE_ENV

    why = kafka_connector_unavailable()
    if why:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{why} ({REQUIRE_ENV}=1)", pytrace=False)
        pytest.skip(why)
    return "kafka"
