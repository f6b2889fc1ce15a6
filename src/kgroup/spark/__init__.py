"""kgroup on Spark: the ``kgroup`` data source and sink, and the rebalance lab's Spark job.

Register the source and sink once per SparkSession, then use format("kgroup")::

    import kgroup.spark
    kgroup.spark.register(spark)

    df = (spark.read.format("kgroup")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders").load())
    (df.selectExpr("key", "upper(cast(value as string)) as value")
       .write.format("kgroup").option("kafka.bootstrap.servers", "127.0.0.1:9092")
       .option("topic", "orders-upper").save())

Reading: ``kgroup.spark.source`` (batch), ``kgroup.spark.stream`` (streaming, commits to
``group.id``), ``kgroup.spark.membership`` (``group.mode=member`` and its delivery
guarantee), ``kgroup.spark.share_source`` (format("kgroup-share"): a share group). Writing:
``kgroup.spark.sink``. Options: ``kgroup.spark.options``. Lag of any Spark Kafka query:
``kgroup.spark.lag``. Spark's own connector beside ours: ``kgroup.spark.connector``.
"""

from __future__ import annotations

from typing import Any

from kgroup.client.kio_loading import kio_without_hypothesis

# Spark's Python workers import this package to unpickle our readers and writers; with
# hypothesis installed, kio would register test-data strategies as it loads (most of a
# worker's import time), for nothing a worker uses.
kio_without_hypothesis()

__all__ = ["register"]


def register(spark: Any) -> None:
    """Make format("kgroup") and format("kgroup-share") available in the SparkSession ``spark``.

    On a local master the workers' Python is set to this one when the one Spark would start
    (``python3`` unless ``PYSPARK_PYTHON`` says otherwise) cannot import kgroup; an explicit
    ``PYSPARK_PYTHON`` without kgroup raises ``SparkSetupError`` saying what to set.
    """
    from .setup import workers_python
    from .share_source import KgroupShareDataSource
    from .source import KgroupDataSource

    workers_python(spark)
    spark.dataSource.register(KgroupDataSource)
    spark.dataSource.register(KgroupShareDataSource)
