"""Fixtures of the Spark tests: one real `kgroup serve` and one local Spark for the session.

Spark starts slowly (a JVM, Python workers), so every test shares one SparkSession
(local[2], no UI, few shuffle partitions) with format("kgroup") registered, and one broker
on a free loopback port; tests keep to topics and groups of their own.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.integration.broker_process import BrokerProcess

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """A `kgroup serve` for the whole session; stopped (and checked) at the end."""
    proc = BrokerProcess(tmp_path_factory.mktemp("spark-broker") / "data").start()
    yield proc
    proc.finish()


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    import kgroup.spark

    session = (SparkSession.builder.master("local[2]").appName("kgroup-spark-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    kgroup.spark.register(session)
    yield session
    session.stop()
