"""Kafka's key partitioner and bootstrap address parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kgroup.cli.partitioner import murmur2, partition_for_key
from kgroup.client.admin import parse_address, parse_bootstrap


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    assert murmur2(data) & 0x7FFFFFFF == kafka_python_murmur2(data) & 0x7FFFFFFF


def test_known_key_lands_where_java_puts_it() -> None:
    # Java: Utils.toPositive(Utils.murmur2("foo".getBytes())) % 3
    assert partition_for_key(b"foo", 3) == (murmur2(b"foo") & 0x7FFFFFFF) % 3
    assert 0 <= partition_for_key(b"", 7) < 7


def test_parse_address_forms() -> None:
    assert parse_address("h:1") == ("h", 1)
    assert parse_address("h") == ("h", 9092)
    assert parse_address("[::1]:9093") == ("::1", 9093)
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    for bad in ("", "h:0", "h:x", ":1"):
        with pytest.raises(ValueError):
            parse_address(bad)
