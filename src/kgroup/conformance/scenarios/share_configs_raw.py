"""Share groups' per-group settings (KIP-1240, as Kafka 4.4's GroupConfig has them) and
DescribeShareGroupOffsets' lag (KIP-1226), asked with exact requests."""

from __future__ import annotations

import time
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.observe import settled
from kgroup.conformance.scenarios.classic_raw import coordinated
from kgroup.conformance.scenarios.share_raw import ACCEPT, RELEASE, RawShareMember, member_a_joined, share_ready
from kgroup.conformance.target import Target

GROUP = 32
SHARE_KEYS = ["share.record.lock.duration.ms", "share.delivery.count.limit", "share.partition.max.record.locks",
              "share.auto.offset.reset", "share.isolation.level", "share.renew.acknowledge.enable",
              "errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable"]


def _set(group: str, name: str, value: str | None, op: int = 0):
    return request("IncrementalAlterConfigs", 1, validate_only=False, resources=[{
        "resource_type": GROUP, "resource_name": group, "configs": [
            {"name": name, "config_operation": op, "value": value}]}])


def _describe(group: str, synonyms: bool = False):
    return request("DescribeConfigs", 4, include_synonyms=synonyms, include_documentation=False, resources=[
        {"resource_type": GROUP, "resource_name": group, "configuration_keys": SHARE_KEYS}])


@scenario("share", "per-group share settings: describe and alter (KIP-1240)",
          rule="a GROUP resource takes Kafka 4.4's share settings: the delivery count limit, record lock duration "
               "and in-flight record locks within the broker's group.share.min/max bounds (a value below the "
               "config's own floor or outside the broker's range is INVALID_CONFIG), the isolation level and the "
               "auto offset reset as written (trimmed, case-sensitive; by_duration:<ISO 8601 duration>, not "
               "negative), share.renew.acknowledge.enable and the dead-letter queue settings (booleans in any "
               "case; no DLQ topic starting with \"__\"); a SET without a value is INVALID_REQUEST")
async def share_group_settings(t: Target) -> None:
    group = t.names.group()
    raw = await coordinated(t, group)
    await t.ask(raw, "describe the defaults with synonyms", _describe(group, synonyms=True))
    for name, value in [("share.delivery.count.limit", "3"), ("share.delivery.count.limit", "1"),
                        ("share.delivery.count.limit", "11"), ("share.delivery.count.limit", "three"),
                        ("share.record.lock.duration.ms", "999"), ("share.record.lock.duration.ms", "60001"),
                        ("share.record.lock.duration.ms", "2000"),
                        ("share.partition.max.record.locks", "99"), ("share.partition.max.record.locks", "150"),
                        ("share.isolation.level", "READ_COMMITTED"), ("share.isolation.level", " read_committed"),
                        ("share.auto.offset.reset", "EARLIEST"), ("share.auto.offset.reset", "by_duration:-PT1H"),
                        ("share.auto.offset.reset", "by_duration:PT1.5H"),
                        ("share.auto.offset.reset", "by_duration:P1DT2H3M4.5S"),
                        ("share.renew.acknowledge.enable", "maybe"), ("share.renew.acknowledge.enable", " FALSE "),
                        ("errors.deadletterqueue.topic.name", "__dlq"), ("errors.deadletterqueue.topic.name", " dlq"),
                        ("errors.deadletterqueue.copy.record.enable", "1"),
                        ("errors.deadletterqueue.copy.record.enable", "True"),
                        ("errors.deadletterqueue.topic.name", None), ("share.delivery.count.limit", None)]:
        await t.ask(raw, f"set {name}={value!r}", _set(group, name, value))
    await settled(raw, _describe(group), lambda r: any(
        c.name == "errors.deadletterqueue.copy.record.enable" and c.value == "true" for c in r.results[0].configs))
    await t.ask(raw, "describe what was set", _describe(group))
    await t.ask(raw, "delete the DLQ topic", _set(group, "errors.deadletterqueue.topic.name", None, op=1))
    await settled(raw, _describe(group), lambda r: any(
        c.name == "errors.deadletterqueue.topic.name" and c.value == "" for c in r.results[0].configs))
    await t.ask(raw, "describe after the delete", _describe(group, synonyms=True))


def _offsets(group: str, topic: str):
    return request("DescribeShareGroupOffsets", 1, groups=[{
        "group_id": group, "topics": [{"topic_name": topic, "partitions": [0]}]}])


async def _lag_is(raw: Any, group: str, topic: str, lag: int) -> None:
    """Wait until the share partition's lag is ``lag`` (its state is written after the answer
    that changed it)."""
    async def check() -> Any:
        r = await raw.call(_offsets(group, topic))
        parts = [p for g in r.groups for tp in g.topics for p in tp.partitions]
        return r if parts and int(parts[0].lag) == lag else None
    await observe.until(check, f"the lag of {group} on {topic} is {lag}")


@scenario("share", "share lag per partition (KIP-1226)",
          rule="DescribeShareGroupOffsets v1 answers each share partition's lag: the log's end minus the start "
               "offset minus the records past it already acknowledged or archived (a record archived at the "
               "delivery count limit counts as done); a partition whose state was only written by "
               "AlterShareGroupOffsets (never loaded) has the end minus its start; none without state (-1)")
async def share_lag(t: Target) -> None:
    raw, group, topic, a = await member_a_joined(t, values=6, share_delivery_count_limit=2)
    await t.ask(raw, "offsets before any fetch", _offsets(group, topic))
    await a.fetch("fetch all", wait_for=6)
    await a.acknowledge("accept 2-3, release 4-5", [(2, 3, ACCEPT), (4, 5, RELEASE)])
    await _lag_is(raw, group, topic, 4)
    await t.ask(raw, "lag with a gap of accepted records", _offsets(group, topic))
    await a.fetch("4-5 again", wait_for=2)
    await a.acknowledge("release 4-5 at the limit: archived", [(4, 5, RELEASE)])
    await _lag_is(raw, group, topic, 2)
    await t.ask(raw, "lag after the delivery count limit", _offsets(group, topic))
    await a.acknowledge("accept 0-1", [(0, 1, ACCEPT)])
    await _lag_is(raw, group, topic, 0)
    await t.ask(raw, "no lag left", _offsets(group, topic))
    await observe.produce(raw, topic, 0, [b"late"])
    await t.ask(raw, "a new record", _offsets(group, topic))
    await a.close()
    # A second group's state set by AlterShareGroupOffsets: never loaded by a share partition.
    other = t.names.group()
    await observe.coordinator(raw, other)
    await t.ask(raw, "alter another group's start offset", request(
        "AlterShareGroupOffsets", 0, group_id=other, topics=[{"topic_name": topic, "partitions": [
            {"partition_index": 0, "start_offset": 2}]}]))
    await t.ask(raw, "its lag, never loaded", _offsets(other, topic))
    await t.ask(raw, "a group with no state", _offsets(t.names.group(), topic))


# CreateTime of the "recent" records: fixed when the scenarios are loaded, so both brokers
# store the same, and well within the 12 hours the scenario looks back.
RECENT_MS = time.time_ns() // 1_000_000


@scenario("share", "by_duration auto offset reset (KIP-1106)",
          rule="share.auto.offset.reset by_duration:<ISO 8601 duration> starts a share partition with no state "
               "at the first record whose timestamp is at most that old; while no record is that recent its "
               "fetches get OFFSET_NOT_AVAILABLE and it stays without state")
async def share_by_duration_reset(t: Target) -> None:
    raw, group, topic, tid = await share_ready(t, values=3)
    await t.ask(raw, "start 12 hours back", _set(group, "share.auto.offset.reset", "by_duration:PT12H"))
    a = RawShareMember(t, raw, group, "A", tid)
    await a.join([topic])
    await a.fetch("only old records")
    await t.ask(raw, "no state yet", _offsets(group, topic))
    await observe.produce(raw, topic, 0, [b"new0", b"new1"], timestamp=RECENT_MS)
    await a.fetch("the recent records", wait_for=2)
    await a.close()


@scenario("share", "share settings applied live (KIP-1240)",
          rule="a share group's delivery count limit changed while its share partition is loaded applies from "
               "the next release: a record already delivered twice, released under a limit lowered to 2, is "
               "archived rather than delivered a third time")
async def share_settings_live(t: Target) -> None:
    raw, group, topic, a = await member_a_joined(t, values=1, share_delivery_count_limit=5)
    await a.fetch("first delivery", wait_for=1)
    await a.fetch("release; second delivery", [(0, 0, RELEASE)], wait_for=1)
    await t.ask(raw, "lower the limit to 2", _set(group, "share.delivery.count.limit", "2"))
    await settled(raw, _describe(group), lambda r: any(
        c.name == "share.delivery.count.limit" and c.value == "2" for c in r.results[0].configs))
    await a.fetch("release again; archived", [(0, 0, RELEASE)])
    await _lag_is(raw, group, topic, 0)
    await t.ask(raw, "offsets", _offsets(group, topic))
    await a.close()
