"""The Spark source and sink over SASL_SSL: the client's security settings as
``kafka.<name>`` options, ACLs applied to the query's principal."""

from __future__ import annotations

import asyncio

import pytest

from kgroup.acl_bindings import AclBinding, AclOperation as Op, AclPermission, PatternType, ResourceType
from kgroup.client import AdminClient
from tests.integration.security_setup import ADMIN, ADMIN_PASSWORD, our_settings, secure_broker


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    sb = secure_broker(tmp_path_factory.mktemp("spark-secure"), ())
    sb.proc.start()

    async def setup():
        async with AdminClient(sb.address(sb.sasl_port),
                               config=our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)) as a:
            await a.set_scram_credentials("spark", "SCRAM-SHA-256", "spark-Pa55")
            await a.create_topics({"secure-in": 2})
            await a.create_acls([AclBinding(rtype, name, PatternType.LITERAL, "User:spark", "*", op,
                                            AclPermission.ALLOW)
                                 for rtype, name, op in ((ResourceType.TOPIC, "secure-in", Op.WRITE),
                                                         (ResourceType.TOPIC, "secure-in", Op.READ),
                                                         (ResourceType.GROUP, "spark-query", Op.READ))])
    try:
        asyncio.run(setup())
        yield sb
    finally:
        sb.proc.finish()


def _options(sb, password: str = "spark-Pa55") -> dict:
    settings = our_settings("SASL_SSL", "SCRAM-SHA-256", "spark", password, sb.certs)
    return {"kafka.bootstrap.servers": sb.address(sb.sasl_ssl_port), **{f"kafka.{k}": v for k, v in settings.items()}}


def test_the_sink_and_the_source_over_sasl_ssl(spark, secured, tmp_path):
    rows = [(f"k{i}", f"v{i}".encode()) for i in range(200)]
    (spark.createDataFrame(rows, "key string, value binary").write.format("kgroup").options(**_options(secured))
     .option("topic", "secure-in").mode("append").save())
    read = spark.read.format("kgroup").options(**_options(secured)).option("subscribe", "secure-in").load()
    assert sorted((bytes(r.key).decode(), bytes(r.value)) for r in read.collect()) == sorted(rows)
    # A stream committing its progress to a group the principal may read.
    query = (spark.readStream.format("kgroup").options(**_options(secured)).option("subscribe", "secure-in")
             .option("startingOffsets", "earliest").option("group.id", "spark-query").load()
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    assert spark.read.parquet(str(tmp_path / "out")).count() == 200

    async def committed():
        async with AdminClient(secured.address(secured.sasl_port),
                               config=our_settings("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)) as a:
            return await a.list_group_offsets("spark-query")
    assert sum(asyncio.run(committed()).values()) == 200


def test_a_wrong_password_fails_the_query_with_the_reason_and_no_secret(spark, secured):
    with pytest.raises(Exception) as info:
        spark.read.format("kgroup").options(**_options(secured, "Wr0ng-spark")).option("subscribe", "secure-in") \
            .load().collect()
    text = str(info.value)
    assert "authentication as spark with SCRAM-SHA-256" in text and "Wr0ng-spark" not in text
