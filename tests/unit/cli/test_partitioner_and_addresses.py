"""Kafka's key partitioner and bootstrap address parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kgroup.cli.partitioner import murmur2, partition_for_key
from kgroup.client.cluster import parse_address, parse_bootstrap


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    assert murmur2(data) & 0x7FFFFFFF == kafka_python_murmur2(data) & 0x7FFFFFFF


# The vectors of Apache Kafka's UtilsTest.testMurmur2 (Utils.murmur2, signed 32-bit).
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key, java", JAVA_MURMUR2.items())
def test_known_keys_hash_and_land_where_java_puts_them(key: bytes, java: int) -> None:
    assert murmur2(key) & 0xFFFFFFFF == java & 0xFFFFFFFF
    # Java: Utils.toPositive(Utils.murmur2(key)) % numPartitions
    assert partition_for_key(key, 7) == (java & 0x7FFFFFFF) % 7
    assert 0 <= partition_for_key(b"", 7) < 7


def test_parse_address_forms() -> None:
    assert parse_address("h:1") == ("h", 1)
    assert parse_address("h") == ("h", 9092)
    assert parse_address("[::1]:9093") == ("::1", 9093)
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    for bad in ("", "h:0", "h:x", ":1"):
        with pytest.raises(ValueError):
            parse_address(bad)
