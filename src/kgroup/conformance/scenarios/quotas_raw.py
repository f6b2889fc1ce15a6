"""Client quotas (KIP-546): AlterClientQuotas' validation and DescribeClientQuotas' filters
(exact, default and any matches, `strict`), as `kafka-client-quotas` and `kafka-configs
--entity-type users|clients` send them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.observe import settled
from kgroup.conformance.target import Target

EXACT, DEFAULT, ANY = 0, 1, 2


def alter(version: int, *entries: tuple[dict[str, str | None], list[tuple[str, float, bool]]],
          validate_only: bool = False):
    return request("AlterClientQuotas", version, validate_only=validate_only, entries=[
        {"entity": [{"entity_type": k, "entity_name": v} for k, v in entity.items()],
         "ops": [{"key": key, "value": value, "remove": remove} for key, value, remove in ops]}
        for entity, ops in entries])


def describe(version: int, *components: tuple[str, int, str | None], strict: bool = False):
    return request("DescribeClientQuotas", version, strict=strict, components=[
        {"entity_type": kind, "match_type": match, "match": name} for kind, match, name in components])


def altered(r: Any) -> list:
    """An AlterClientQuotas answer, its entries and their entities sorted (Kafka answers them
    in the order of a hash map; the wire checks compare that order), with the error texts."""
    return sorted((([(e.entity_type, e.entity_name) for e in sorted(x.entity, key=lambda e: e.entity_type)],
                    int(x.error_code), {"text": x.error_message}) for x in r.entries), key=repr)


def entries(r: Any, names: set[str | None] | None = None) -> Any:
    """A describe answer in a stable order; with `names`, only entities made of those names
    (the shared brokers hold other tests' quotas: "other tests' entries")."""
    if r.error_code:
        return {"error_code": r.error_code, "text": r.error_message}
    found = []
    for e in r.entries or ():
        entity = tuple(sorted((x.entity_type, x.entity_name) for x in e.entity))
        if names is not None and any(n not in names for _, n in entity):
            continue
        found.append((entity, sorted((v.key, float(v.value)) for v in e.values)))
    return {"error_code": 0, "entries": sorted(found, key=repr)}



@contextlib.asynccontextmanager
async def client_quota(raw: Any, client: str, key: str, value: float = 1000.0) -> AsyncIterator[None]:
    """`key` = `value` on client id `client` while the block runs: set, seen in force, removed."""
    await raw.call(alter(1, ({"client-id": client}, [(key, value, False)])))
    try:
        await settled(raw, describe(1, ("client-id", EXACT, client)), lambda r: bool(r.entries))
        yield
    finally:
        await raw.call(alter(1, ({"client-id": client}, [(key, 0.0, True)])))


def produce_20kb(topic: str) -> Any:
    """One batch of twenty 1000-byte records to partition 0 (twice a 1000 B/s quota over the
    first ten windows)."""
    return request("Produce", 9, acks=-1, timeout_ms=30_000, topic_data=[
        {"name": topic, "partition_data": [{"index": 0, "records": observe.batch([b"x" * 1000] * 20)}]}])


@scenario("admin", "client quotas: AlterClientQuotas validation and DescribeClientQuotas filters (KIP-546)",
          rule="AlterClientQuotas checks each entry apart (INVALID_REQUEST with Kafka's text for an unknown key, "
               "a bad entity combination, a value not above 0 or a fractional byte rate), "
               "validate_only changes nothing, a removal of an unset key is no error; DescribeClientQuotas "
               "matches exact names, the default entity (null name) or any, `strict` leaves out entities with "
               "more types than the filter names, and an invalid filter is INVALID_REQUEST")
async def admin_client_quotas(t: Target) -> None:
    raw = await t.raw()
    user, client = t.names.group("user"), t.client_id("quota")
    other = t.names.group("user2")
    ours = {user, client, other, None}
    for version in (0, 1):
        for label, req in (
                ("an unknown key", alter(version, ({"user": user}, [("nonsense_rate", 1.0, False)]))),
                ("a negative byte rate", alter(version, ({"user": user}, [("producer_byte_rate", -1.0, False)]))),
                ("a fractional byte rate", alter(version, ({"user": user}, [("producer_byte_rate", 1.5, False)]))),
                ("a fractional request percentage",
                 alter(version, ({"user": user}, [("request_percentage", 12.5, False)]), validate_only=True)),
                ("an empty entity", alter(version, ({}, [("producer_byte_rate", 1.0, False)]))),
                ("an unknown entity type", alter(version, ({"group": user}, [("producer_byte_rate", 1.0, False)]))),
                ("user and ip", alter(version, ({"user": user, "ip": "1.2.3.4"},
                                                [("producer_byte_rate", 1.0, False)]))),
                ("connection rate on a user", alter(version, ({"user": user},
                                                              [("connection_creation_rate", 1.0, False)]))),
                ("byte rate on an ip", alter(version, ({"ip": "1.2.3.4"}, [("producer_byte_rate", 1.0, False)]))),
                ("a bad ip", alter(version, ({"ip": "not-an-ip"}, [("connection_creation_rate", 1.0, False)]))),
                ("validate only", alter(version, ({"user": user}, [("producer_byte_rate", 1024.0, False)]),
                                        validate_only=True)),
                ("remove an unset key", alter(version, ({"user": other}, [("consumer_byte_rate", 0.0, True)]))),
                ("one good, one bad", alter(version, ({"user": other}, [("nonsense", 1.0, False)]),
                                            ({"client-id": client}, [("consumer_byte_rate", 1.0, True)])))):
            t.add(f"v{version} {label}", altered(await raw.call(req)))
    nothing = describe(1, ("user", EXACT, user))
    t.add("validate_only changed nothing", entries(await raw.call(nothing)))
    try:
        t.add("set quotas", altered(await raw.call(alter(1, ({"user": user}, [("producer_byte_rate", 1024.0, False),
                                                                   ("request_percentage", 50.0, False)]),
                                            ({"user": user, "client-id": client},
                                             [("consumer_byte_rate", 2048.0, False)]),
                                            ({"user": user, "client-id": None},
                                             [("controller_mutation_rate", 5.0, False)]),
                                            ({"client-id": client}, [("producer_byte_rate", 4096.0, False)])))))
        await settled(raw, describe(1, ("client-id", EXACT, client), strict=True),
                      lambda r: bool(r.entries))
        for version in (0, 1):
            for label, req in (
                    ("the user exactly", describe(version, ("user", EXACT, user))),
                    ("the user strictly", describe(version, ("user", EXACT, user), strict=True)),
                    ("user and client", describe(version, ("user", EXACT, user), ("client-id", EXACT, client))),
                    ("user and default client", describe(version, ("user", EXACT, user), ("client-id", DEFAULT, None))),
                    ("user and any client", describe(version, ("user", EXACT, user), ("client-id", ANY, None))),
                    ("user and any client strictly",
                     describe(version, ("user", EXACT, user), ("client-id", ANY, None), strict=True)),
                    ("the client strictly", describe(version, ("client-id", EXACT, client), strict=True)),
                    ("the client", describe(version, ("client-id", EXACT, client)))):
                t.add(f"v{version} {label}", entries(await raw.call(req), ours))
            for label, req in (
                    ("default with a name", describe(version, ("user", DEFAULT, user))),
                    ("exact without a name", describe(version, ("user", EXACT, None))),
                    ("a type twice", describe(version, ("user", EXACT, user), ("user", ANY, None))),
                    ("an unknown type", describe(version, ("group", EXACT, user))),
                    ("an unknown match type", describe(version, ("user", 7, user))),
                    ("user and ip", describe(version, ("user", EXACT, user), ("ip", ANY, None)))):
                t.add(f"v{version} {label}", entries(await raw.call(req), ours))
        t.add("remove some", altered(await raw.call(alter(1, ({"user": user}, [("producer_byte_rate", 0.0, True)]),
                                                          ({"user": user, "client-id": None},
                                                           [("controller_mutation_rate", 0.0, True)])))))
        await settled(raw, describe(1, ("user", EXACT, user), ("client-id", DEFAULT, None)),
                      lambda r: not r.entries)
        t.add("after removal", entries(await raw.call(describe(1, ("user", EXACT, user), ("client-id", ANY, None))),
                                       ours))
    finally:
        await raw.call(alter(1, ({"user": user}, [("request_percentage", 0.0, True)]),
                             ({"user": user, "client-id": client}, [("consumer_byte_rate", 0.0, True)]),
                             ({"client-id": client}, [("producer_byte_rate", 0.0, True)])))


@scenario("admin", "client quotas: a producer over its byte rate is throttled (KIP-13, KIP-219)",
          rule="a Produce that takes its client id past producer_byte_rate is stored and answered with a "
               "throttle time of (rate - quota) / quota x the window (rate over at least ten one-second "
               "windows), compared in whole seconds")
async def admin_client_quota_throttle(t: Target) -> None:
    raw = await t.raw()
    topic, client = t.names.topic(), t.client_id("throttled")
    await observe.create_topic(raw, topic, 1)
    async with client_quota(raw, client, "producer_byte_rate"):
        # About 20 kB at once: 2 kB/s over the first ten windows, twice the quota (its own
        # connection: after the answer it is muted for the throttle time).
        producer = await t.raw("throttled")
        r = await producer.call(produce_20kb(topic))
        throttle = r.throttle_time.total_seconds()
        t.add("the throttled produce", {"error_code": r.responses[0].partition_responses[0].error_code,
                                        "throttle (whole seconds)": round(throttle)})


@scenario("security", "client quotas need DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster", pair="secured",
          rule="without an ACL alice's DescribeClientQuotas is CLUSTER_AUTHORIZATION_FAILED and each entry of her "
               "AlterClientQuotas too; a super user's pass")
async def security_client_quota_acls(t: Target) -> None:
    admin = await t.raw("admin", user="admin")
    alice = await t.raw("alice", user="alice")
    user = t.names.group("user")
    for who, raw in (("alice", alice), ("admin", admin)):
        r = await raw.call(describe(1, ("user", EXACT, user)))
        t.add(f"{who} describes", entries(r, {user}))
        t.add(f"{who} alters (validate only)", altered(await raw.call(alter(
            1, ({"user": user}, [("producer_byte_rate", 1024.0, False)]),
            ({"client-id": user}, [("consumer_byte_rate", 1024.0, False)]), validate_only=True))))


@scenario("admin", "client quotas: a consumer over its byte rate gets a throttled Fetch with no records (KIP-219)",
          rule="a Fetch whose answer would take its client id past consumer_byte_rate is answered at once with "
               "its throttle time and no partitions at all (Kafka's fetch context's throttled response): error "
               "NONE, session id 0 for a full fetch, which opens no session; compared in whole seconds")
async def admin_client_quota_fetch_throttle(t: Target) -> None:
    raw = await t.raw()
    topic, client = t.names.topic(), t.client_id("fetcher")
    await observe.create_topic(raw, topic, 1)
    await raw.call(produce_20kb(topic))
    async with client_quota(raw, client, "consumer_byte_rate"):
        # One batch of about 20 kB (a fetch gets the first batch whole, whatever the quota):
        # 2 kB/s over the first ten windows, twice the quota.
        fetcher = await t.raw("fetcher")
        r = await fetcher.call(request(
            "Fetch", 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
            session_id=0, session_epoch=0, forgotten_topics_data=[], rack_id="", topics=[
                {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                 "last_fetched_epoch": -1, "log_start_offset": -1,
                                                 "partition_max_bytes": 1 << 20}]}]))
        t.add("the throttled fetch", {"error_code": r.error_code, "session_id": r.session_id,
                                      "partitions answered": sum(len(x.partitions) for x in r.responses),
                                      "throttle (whole seconds)": round(r.throttle_time.total_seconds())})
