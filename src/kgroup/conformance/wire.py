"""Differential wire checks: well-formed requests of every API version either broker
advertises, generated with hypothesis from the request schemas, sent to both, answers
compared field by field.

How this works: `request_strategy` draws an instance of a request class field by field —
nullable fields null or set, arrays empty, null or short, optional (tagged) fields left at
their default or set, strings from a small pool of names no scenario uses (so every group,
topic, transactional id or user is unknown, or made by an earlier example on both brokers
alike), integers from values that exercise the checks (-1, 0, small, huge), durations short
(no request waits long). `check_version` runs one hypothesis test per (API, version),
with a fixed seed (the same examples on every run, as CI needs). Each example goes
to both brokers as encoded; the first also with bytes after the body and, for flexible
versions, with an unknown tagged field. Each answer (or the broker closing the connection)
becomes a transcript entry, normalized as scenario transcripts are plus `WIRE_NORMALIZATIONS`,
and the two transcripts are compared per variant.

A Metadata request that may auto-create topics (v0-v3 always may, v4+ when it says so) is
followed by a wait until both brokers agree which of its topics exist: Kafka answers the
request that creates a topic UNKNOWN_TOPIC_OR_PARTITION and creates it in the background
(through its controller), kgroup at once; without the wait the next example would see the
topic on kgroup and not yet on Kafka.

`run_wire_checks(pair)` goes over every (API, version) either broker advertises: both serve
it → compared; only Kafka serves it → listed with the reason (`NOT_SERVED`, `VERSION_GAPS`);
no schema → "not comparable yet". `probe_unserved` asks both brokers for a version neither
serves. Divergences that remain are explained in `WIRE_DIVERGENCES`; anything else that
differs is unexplained and fails the suite.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import struct
import time
import typing
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from kgroup.conformance.divergences import Divergence
from kgroup.conformance.messages import api_name
from kgroup.conformance.raw import ConnectionClosed, RawClient, unknown_tagged_field
from kgroup.conformance.transcript import Transcript, compare
from kgroup.wire.codec import request_class

# The seed of every wire check: the same examples (but for the run's names) on every run.
SEED = 20264427
EXAMPLES = 4
ANSWER_TIMEOUT = 8.0
# An example an explained divergence compares apart (one Kafka may never answer) waits less.
APART_TIMEOUT = 2.0
METADATA = 3
# How long an auto-created topic may take to show on both brokers (Kafka's comes through its
# controller: tens of milliseconds, seconds under load).
SETTLE_TIMEOUT = 15.0
API_VERSIONS = 18
CLOSED = "CLOSED"
NO_ANSWER = "NO ANSWER"
VARIANTS = ("as encoded", "bytes after the body", "an unknown tagged field")

# Rewrites the wire checks add to the transcripts' NORMALIZATIONS (name -> why).
WIRE_NORMALIZATIONS: dict[str, str] = {
    "other tests' entries": "a request for every topic, group, transaction or user (a null list) is answered "
                            "with what the shared brokers hold; entries not named from the checks' pool (or "
                            "\"\") are left out: other tests made them, on one broker or both",
    "advertised ranges": "ApiVersions' list of ranges is compared per API and version in the version table, "
                         "not as one list (each difference there is a row with its reason)",
}

# Kafka 4.4 APIs kgroup does not serve, each with its reason (every advertised one must be here).
_INTERNAL = ("KRaft's own controller-quorum requests: kgroup has no KRaft quorum (a single host, or nodes sharing "
             "a data directory); Kafka advertises them on its client listener, no client sends them")
NOT_SERVED: dict[int, Divergence] = {
    **{key: Divergence("single host", f"{api_name(key)} is not served by kgroup", _INTERNAL, ())
       for key in (55, 64, 80, 81, 82, 94)},
}

# Versions Kafka 4.4 serves of an API kgroup serves at other versions: by API key (and, for a
# reason of its own, by (key, version)), why.
VERSION_GAPS: dict[Any, Divergence] = {
    **{(0, v): Divergence(
        "kafka defect", f"Produce v{v}: advertised by Kafka 4.4, refused by both",
        "Kafka 4.4 lists Produce v0-v2 in ApiVersions only for old librdkafka's feature detection (KAFKA-18659) "
        "and closes the connection on any such request, as kgroup does for a version it does not list; the "
        "ApiVersions lists themselves are compared by issue 29's acceptance test", ())
       for v in (0, 1, 2)},
}


@dataclass(frozen=True)
class WireDivergence:
    """An explained difference in the answers of one API's versions: the top-level `fields`
    of every answer, and the whole answer of the examples whose request `requests` picks,
    are compared apart (they must still differ, else the entry is stale); everything else
    must agree."""

    divergence: Divergence
    fields: tuple[str, ...] = ()
    requests: Callable[[Any], bool] | None = None
    versions: tuple[int, int] = (0, 1 << 15)


# Kafka 4.4 finds a session's cache shard by dividing its id by 2^31/8 (8 shards); an id no
# shard holds (2^31-8 and up, or -2^28+1 and below) fails any v7+ fetch that names it.
_KAFKA_SHARD_RANGE = (2**31 - 1) // 8


def _off_kafka_shards(request: Any) -> bool:
    """A v7+ fetch whose session id Kafka 4.4's session cache cannot map to a shard."""
    session_id = getattr(request, "session_id", 0)
    return not -_KAFKA_SHARD_RANGE < session_id < 8 * _KAFKA_SHARD_RANGE


def _zero_topic_id_not_last(request: Any) -> bool:
    """A full v13+ fetch whose answer lists a partition of the zero topic id before another
    partition (all of the checks' topics are unknown: answered in request order, each once)."""
    if getattr(request, "session_epoch", None) not in (0, -1):
        return False
    answered = list(dict.fromkeys((t.topic_id, int(p.partition)) for t in request.topics for p in t.partitions))
    return any(topic_id in (None, uuid.UUID(int=0)) for topic_id, _ in answered[:-1])


WIRE_DIVERGENCES: dict[int, tuple[WireDivergence, ...]] = {
    API_VERSIONS: (WireDivergence(Divergence(
        "single host", "ApiVersions v3+: Kafka 4.4 "
        "lists eligible.leader.replicas.version (kgroup does not), and its epoch is its metadata "
        "log's offset (kgroup's counts the changes since the data dir was made)",
        "a single host has no replica "
        "elections; an epoch is compared only as going up (scenario admin_feature_levels)", ()),
        fields=("supported_features", "finalized_features", "finalized_features_epoch"), versions=(3, 1 << 15)),),
    1: (WireDivergence(Divergence(
        "kafka defect", "Fetch v7+ naming a session id Kafka 4.4's session cache cannot map to one of its 8 "
        "shards (2^31-8 and up, -2^28+1 and below: the id divided by (2^31-1)/8 is no shard's index): Kafka "
        "fails with UNKNOWN_SERVER_ERROR, whether the fetch closes the session or continues it; kgroup answers "
        "the fetch (closes nothing, or FETCH_SESSION_ID_NOT_FOUND)",
        "a failure of Kafka's, on a session id no client makes (Kafka's ids are positive and below 2^31-8; so "
        "are kgroup's)", ()), requests=_off_kafka_shards, versions=(7, 1 << 15)),
        WireDivergence(Divergence(
            "kafka defect", "Fetch v13+ whose answer lists a partition of the zero topic id (an unknown id, "
            "UNKNOWN_TOPIC_ID) before another partition: Kafka 4.4 fails with UNKNOWN_SERVER_ERROR (a "
            "NullPointerException in FetchResponse.matchingTopic, which compares the null name of that topic); "
            "kgroup answers every partition", "a failure of Kafka's, on a topic id no client sends (the zero "
            "id names no topic)", ()), requests=_zero_topic_id_not_last, versions=(13, 1 << 15))),
    33: (WireDivergence(Divergence(
        "kafka defect", "AlterConfigs naming a resource type Kafka 4.4 does not know (only 2 TOPIC, 4 BROKER, "
        "8 BROKER_LOGGER, 16 CLIENT_METRICS, 32 GROUP exist): Kafka never answers; kgroup answers INVALID_REQUEST "
        "for every resource", "a request left unanswered until the client's timeout is a failure of Kafka's; a "
        "clear error is what a client can act on", ()),
        requests=lambda r: any(int(x.resource_type) not in (2, 4, 8, 16, 32) for x in getattr(r, "resources", ()))),),
    **{key: (WireDivergence(Divergence(
        "not client-facing", f"{api_name(key)} (the share-state persister, sent by partition leaders to the share "
        "coordinator) naming a partition: a single Kafka 4.4 node answers NOT_COORDINATOR for every partition (or "
        "nothing, for a partition Kafka does not take), its share coordinator having no __share_group_state "
        "partition loaded until a share group first persists state there; kgroup keeps share state in the group's "
        "metadata partition, always loaded, and answers from it (a zero topic id INVALID_REQUEST)",
        "only brokers send these (CLUSTER_ACTION); a kgroup node answers another kgroup node, whose requests the "
        "3-node share test exercises (tests/integration/test_cluster_share_nodes.py)", ()),
        requests=lambda r: bool(r.group_id) and any(t.partitions for t in r.topics)),)
       # InitializeShareGroupState's seeded examples never name a group and a partition together.
       for key in (84, 85, 86, 87)},
    24: (WireDivergence(Divergence(
        "not client-facing", "AddPartitionsToTxn v4+ (brokers' verification requests) with no transactions at all, "
        "or one transactional id twice: Kafka 4.4 never answers the first and merges the second's results; kgroup "
        "answers each transaction as asked",
        "v4+ needs CLUSTER_ACTION and is sent by brokers, never empty or with a transactional id twice; a request "
        "left unanswered until the client's timeout is not worth copying", ()),
        requests=lambda r: getattr(r, "transactions", None) == () or len(
            {t.transactional_id for t in getattr(r, "transactions", ())}) < len(getattr(r, "transactions", ())),
        versions=(4, 1 << 15)),),
    75: (WireDivergence(Divergence(
        "internal topics", "DescribeTopicPartitions of every topic (no names): the page and its next_cursor "
        "name whichever topic follows on each broker — the internal topics differ (Kafka's __consumer_offsets, "
        "kgroup's __kgroup_events), and so do the topics other tests made on the shared brokers, which the "
        "\"other tests' entries\" normalization cannot take out of a cursor (a limit of 0 or less counts as 1)",
        "kgroup keeps group metadata in its own log, not in a __consumer_offsets topic, and its group events in "
        "__kgroup_events; named topics page alike (compared)", ()),
        requests=lambda r: not r.topics),),
    74: (WireDivergence(Divergence(
        "internal topics", "ListConfigResources listing topics, groups or client-metrics subscriptions (v0, or v1 "
        "with no types or naming TOPIC, GROUP or CLIENT_METRICS): the internal topics differ (Kafka's "
        "__consumer_offsets and __transaction_state, kgroup's __kgroup_events), and so do the topics, group "
        "configs and subscriptions other tests made on the shared brokers",
        "kgroup keeps group metadata and transactions in its own logs, not in topics; the brokers and loggers "
        "listed and the refused types are compared, and a scenario's own subscriptions in "
        "admin_client_telemetry", ()),
        requests=lambda r: not getattr(r, "resource_types", ()) or bool(
            {2, 16, 32} & {int(t) for t in r.resource_types})),),
}
# Divergences the wire checks found with their fixed seeds (SEED) that are not closed yet,
# by API key: the API's versions may differ from Kafka's (status "open", listed in the
# report as such) and must still differ somewhere (else the entry is stale). Each is a
# difference in behaviour to fix in kgroup, not a reason to keep it.
_FOUND = "found by the wire checks; not closed yet"
OPEN_FINDINGS: dict[int, Divergence] = {key: Divergence("open: found, to close", what, _FOUND, ()) for key, what in {
}.items()}


@dataclass
class VersionResult:
    api_key: int
    version: int
    status: str          # agree | diverge | explained | open | not served | not comparable
    examples: int = 0
    variants: dict[str, str] = field(default_factory=dict)   # variant -> agree | diverge | explained
    detail: str = ""
    divergence: Divergence | None = None
    seconds: float = 0.0
    lines: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)  # variant -> (Kafka's, kgroup's)

    @property
    def name(self) -> str:
        return api_name(self.api_key)

    @property
    def unexplained(self) -> bool:
        return self.status == "diverge"


# ---- generating requests ----------------------------------------------------------------

def pool(run: str) -> tuple[str, ...]:
    """The names of the wire checks of one run: unknown to every scenario."""
    prefix = f"cfw-{run}-"
    return (prefix + "x", "", prefix + "Δ-☃", prefix + "y" * 40, prefix + "unknown")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _base(hint: Any) -> Any:
    while hasattr(hint, "__supertype__"):
        hint = hint.__supertype__
    return hint


def _int_strategy(name: str, low: int, high: int) -> st.SearchStrategy[int]:
    lowered = name.lower()
    if lowered == "acks":       # acks=0 is answered by no one: nothing to compare, a timeout spent
        values: Iterable[int] = (-1, 1, 2)
    elif lowered == "timeout":  # an admin request's (or a produce's) deadline: past, or ample
        values = (-1, 0, 5000)
    elif any(word in lowered for word in ("timeout", "wait", "interval", "time", "retention")):
        values = (-1, 0, 1, 10, 100)
    elif any(word in lowered for word in ("partitions", "count", "replication")):
        values = (-1, 0, 1, 2)
    else:
        values = (-2, -1, 0, 1, 2, 7, 1000, high, low)
    return st.sampled_from(sorted({v for v in values if low <= v <= high}))


def _field_strategy(name: str, hint: Any, names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    args = typing.get_args(hint)
    if type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return st.one_of(st.none(), _field_strategy(name, inner, names))
    if typing.get_origin(hint) is tuple:
        return st.lists(_field_strategy(name, args[0], names), max_size=2).map(tuple)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return entity_strategy(hint, names)
    base = _base(hint)
    low, high = getattr(hint, "__low__", None), getattr(hint, "__high__", None)
    if getattr(hint, "__name__", "") == "ErrorCode":
        from kio.schema.errors import ErrorCode  # noqa: PLC0415
        return st.sampled_from([ErrorCode(0), ErrorCode(25)])
    if isinstance(base, type):
        if issubclass(base, bool):
            return st.booleans()
        if issubclass(base, datetime.timedelta) or "Timedelta" in getattr(hint, "__name__", ""):
            # An admin request's deadline is past or ample (Kafka's controller may miss a few
            # milliseconds under load); other durations stay short, so nothing waits long.
            choices = [0, 5000] if name == "timeout" else [0, 10, 100]
            return st.sampled_from(choices).map(lambda ms: datetime.timedelta(milliseconds=ms))
        if issubclass(base, datetime.datetime):
            return st.just(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
        if issubclass(base, int) and low is not None:
            return _int_strategy(name, int(low), int(high))
        if issubclass(base, int):
            return st.sampled_from([-1, 0, 1])
        if issubclass(base, float):
            return st.sampled_from([0.0, 1.5])
        if issubclass(base, str):
            return st.sampled_from(names)
        if issubclass(base, bytes):
            return st.sampled_from([b"", b"\x00\x01", b"\xff" * 8])
        if issubclass(base, uuid.UUID):
            return st.sampled_from([uuid.UUID(int=0), uuid.UUID("12345678-1234-5678-1234-567812345678")])
    return st.nothing()


_DEFAULT = object()


@cache
def entity_strategy(cls: type, names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Instances of entity `cls`: each field drawn by its type; an optional (tagged or
    defaulted) field is either left at its default or drawn."""
    fields = {}
    for f in dataclasses.fields(cls):
        drawn = _field_strategy(f.name, _hints(cls)[f.name], names)
        optional = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        fields[f.name] = st.one_of(st.just(_DEFAULT), drawn) if optional else drawn

    def build(values: dict[str, Any]) -> Any:
        return cls(**{k: v for k, v in values.items() if v is not _DEFAULT})
    return st.fixed_dictionaries(fields).map(build)


def request_strategy(api_key: int, version: int, names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return entity_strategy(request_class(api_key, version), names)


# ---- sending ------------------------------------------------------------------------------

async def _ask(address: str, payload: bytes, api_key: int, version: int, timeout: float = ANSWER_TIMEOUT) -> Any:
    """One request's answer on a fresh connection: the decoded response, or CLOSED."""
    from kgroup.wire import decode_response  # noqa: PLC0415

    client = await RawClient.open(address, "kgroup-conformance-wire")
    try:
        frame = await client.send_bytes(api_key, version, payload, timeout=timeout)
        try:
            return decode_response(api_key, version, frame)[1]
        except Exception as exc:  # noqa: BLE001 (an answer no codec reads: compared as such)
            return f"UNDECODABLE: {type(exc).__name__}"
    except (ConnectionClosed, ConnectionError):
        return CLOSED
    except TimeoutError:
        return NO_ANSWER
    finally:
        await client.close()


async def _both(kafka: str, kgroup: str, payload: bytes, api_key: int, version: int,
                timeout: float = ANSWER_TIMEOUT) -> tuple[Any, Any]:
    kafka_answer, kgroup_answer = await asyncio.gather(_ask(kafka, payload, api_key, version, timeout),
                                                       _ask(kgroup, payload, api_key, version, timeout))
    return kafka_answer, kgroup_answer


async def _auto_created_settled(kafka: str, kgroup: str, request: Any) -> None:
    """Wait until both brokers agree which topics of a Metadata `request` that may
    auto-create them exist (see the module); a lasting difference is left to the comparison."""
    topics = getattr(request, "topics", None)
    if not topics or not getattr(request, "allow_auto_topic_creation", True):
        return
    from kgroup.conformance.messages import request as make_request  # noqa: PLC0415

    names = sorted({t.name for t in topics if getattr(t, "name", None)})
    if not names:
        return
    payload = _payload(make_request("Metadata", 12, topics=[{"name": n} for n in names],
                                    allow_auto_topic_creation=False))

    def existing(answer: Any) -> set[str] | None:
        if not hasattr(answer, "topics"):
            return None
        return {t.name for t in answer.topics if int(t.error_code) == 0}

    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        a, b = await _both(kafka, kgroup, payload, METADATA, 12)
        if existing(a) == existing(b) or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.05)


def _variants(payload: bytes, flexible: bool, first: bool) -> dict[str, bytes]:
    out = {VARIANTS[0]: payload}
    if first:
        out[VARIANTS[1]] = payload + b"\x00\x07\x07"
        tagged = unknown_tagged_field(payload) if flexible else payload
        if tagged != payload:
            out[VARIANTS[2]] = tagged
    return out


def _payload(request: Any) -> bytes:
    from kgroup.wire import encode_request  # noqa: PLC0415

    return encode_request(int(request.__api_key__), int(request.__version__), 1, "kgroup-conformance-wire",
                          request)[4:]


# ---- comparing ----------------------------------------------------------------------------

_LISTED_BY = ("name", "topic", "topic_name", "group_id", "transactional_id", "user")


def pooled(value: Any, names: tuple[str, ...]) -> Any:
    """Plain data of an answer with list entries named outside `names` left out ("other
    tests' entries"); ApiVersions' ranges replaced ("advertised ranges")."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: pooled(getattr(value, f.name), names) for f in dataclasses.fields(value)}
        if int(getattr(value, "__api_key__", -1)) == API_VERSIONS and "api_keys" in out:
            out["api_keys"] = "RANGES"
        return out
    if isinstance(value, (list, tuple)):
        return [pooled(v, names) for v in value if not _foreign(v, names)]
    return value


def _foreign(entry: Any, names: tuple[str, ...]) -> bool:
    if not dataclasses.is_dataclass(entry):
        return False
    for key in _LISTED_BY:
        if key == "name" and not (hasattr(entry, "partitions") or hasattr(entry, "topic_id")):
            continue            # only a topic's name (a feature's or a config's is no test's)
        named = getattr(entry, key, None)
        if isinstance(named, str):
            return named not in names
    return False


def _stripped(value: Any, fields: tuple[str, ...]) -> Any:
    return {k: v for k, v in value.items() if k not in fields} if isinstance(value, dict) and fields else value


def _only(value: Any, fields: tuple[str, ...]) -> Any:
    return {k: v for k, v in value.items() if k in fields} if isinstance(value, dict) else value


def _compare(answers: list[tuple[str, str, Any, Any, Any]], names: tuple[str, ...],
             apart: tuple[WireDivergence, ...]) -> dict[str, tuple[str, str, Transcript, Transcript]]:
    """Per variant: (agree | diverge | explained | stale, diff, Kafka's transcript, kgroup's).
    What `apart` names (fields, examples) is compared apart (see WireDivergence)."""
    out = {}
    fields = tuple(f for entry in apart for f in entry.fields)
    for variant in VARIANTS:
        a, b, ka, kb = Transcript(), Transcript(), Transcript(), Transcript()
        for v, label, kafka_answer, kgroup_answer, request in answers:
            if v != variant:
                continue
            x, y = pooled(kafka_answer, names), pooled(kgroup_answer, names)
            if any(entry.requests is not None and entry.requests(request) for entry in apart):
                ka.add(label, x)
                kb.add(label, y)
                continue
            a.add(label, _stripped(x, fields))
            b.add(label, _stripped(y, fields))
            if fields:
                ka.add(label, _only(x, fields))
                kb.add(label, _only(y, fields))
        if not a.entries and not ka.entries:
            continue
        comparison = compare(a, b)
        if not comparison.agree:
            out[variant] = ("diverge", comparison.diff, a, b)
        elif not apart or not (ka.entries or kb.entries):
            out[variant] = ("agree", "", a, b)
        else:
            known = compare(ka, kb)
            out[variant] = ("explained" if not known.agree else "stale", known.diff, a, b)
    return out


def explained(api_key: int, version: int) -> tuple[WireDivergence, ...]:
    return tuple(e for e in WIRE_DIVERGENCES.get(api_key, ()) if e.versions[0] <= version <= e.versions[1])


def check_version(kafka: str, kgroup: str, api_key: int, version: int, run: str = "0",
                  examples: int = EXAMPLES) -> VersionResult:
    """Hypothesis-generated requests of (api_key, version) to both brokers (see the module)."""
    started = time.monotonic()
    names = pool(run)
    flexible = bool(request_class(api_key, version).__flexible__)
    answers: list[tuple[str, str, Any, Any]] = []
    sent = 0

    @seed(SEED + 64 * api_key + version)     # (derandomize would seed from the strategy: this run's names)
    @settings(max_examples=examples, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(request_strategy(api_key, version, names))
    def one(request: Any) -> None:
        nonlocal sent
        try:
            payload = _payload(request)
        except Exception:  # noqa: BLE001 (a draw the codec cannot encode: not a request anyone sends)
            return
        sent += 1
        for variant, data in _variants(payload, flexible, sent == 1).items():
            wait = APART_TIMEOUT if any(e.requests is not None and e.requests(request)
                                        for e in explained(api_key, version)) else ANSWER_TIMEOUT
            kafka_answer, kgroup_answer = asyncio.run(_both(kafka, kgroup, data, api_key, version, wait))
            if api_key == METADATA:
                asyncio.run(_auto_created_settled(kafka, kgroup, request))
            answers.append((variant, f"example {sent} ({variant}): {_short(request)}", kafka_answer,
                            kgroup_answer, request))

    one()
    result = VersionResult(api_key, version, "agree", sent)
    apart = explained(api_key, version)
    details = []
    for variant, (state, diff, a, b) in _compare(answers, names, apart).items():
        result.lines[variant] = (a.lines(), b.lines())
        result.variants[variant] = state
        if state == "explained":
            result.divergence = apart[0].divergence if len(apart) == 1 else Divergence(
                "; ".join(dict.fromkeys(e.divergence.kind for e in apart)),
                " / ".join(e.divergence.what for e in apart), " / ".join(e.divergence.why for e in apart), ())
        elif state == "diverge":
            details.append(f"{variant}:\n{diff[:3000]}")
    # (A variant whose explained part happens to agree is "stale" alone; an entry no version
    # of its API shows at all is reported by run_wire_checks.)
    states = set(result.variants.values())
    result.status = "diverge" if "diverge" in states else "explained" if "explained" in states else "agree"
    if result.status == "diverge" and api_key in OPEN_FINDINGS:
        result.status, result.divergence = "open", OPEN_FINDINGS[api_key]
    result.detail = "\n".join(details)
    result.seconds = time.monotonic() - started
    return result


def _short(request: Any) -> str:
    text = repr(request)
    return text if len(text) <= 400 else text[:400] + "…"


def probe_unserved(kafka: str, kgroup: str, api_key: int, version: int) -> VersionResult:
    """A request header of a version (or API) neither broker serves, with an empty body: the
    answer each gives (ApiVersions' v0 error answer, or a closed connection)."""
    client_id = b"kgroup-conformance-wire"
    payload = struct.pack(">hhih", api_key, version, 1, len(client_id)) + client_id + b"\x00"
    answer_version = 0 if api_key == API_VERSIONS else version
    kafka_answer, kgroup_answer = asyncio.run(_both(kafka, kgroup, payload, api_key, answer_version))
    a, b = Transcript(), Transcript()
    a.add(f"{api_name(api_key)} v{version}", pooled(kafka_answer, ()))
    b.add(f"{api_name(api_key)} v{version}", pooled(kgroup_answer, ()))
    comparison = compare(a, b)
    return VersionResult(api_key, version, "agree" if comparison.agree else "diverge", 1,
                         {"a version neither serves": "agree" if comparison.agree else "diverge"},
                         comparison.diff[:2000])


# ---- every advertised version --------------------------------------------------------------

def _known(api_key: int, version: int) -> bool:
    from kgroup.wire.schemas import load_request_schema, load_response_schema  # noqa: PLC0415

    try:
        load_request_schema(api_key, version)
        load_response_schema(api_key, version)
    except Exception:  # noqa: BLE001 (UnknownAPIKey / UnknownEntity)
        return False
    return True


def plan(kafka: dict[int, tuple[int, int]], ours: dict[int, tuple[int, int]]) -> list[tuple[int, int, str]]:
    """Every (API, version) either broker advertises, with what is done with it: "compare",
    "kafka only", "kgroup only" or "no schema"."""
    out = []
    for key in sorted(set(kafka) | set(ours)):
        versions = set()
        for ranges in (kafka, ours):
            if key in ranges:
                versions |= set(range(ranges[key][0], ranges[key][1] + 1))
        for version in sorted(versions):
            in_kafka = key in kafka and kafka[key][0] <= version <= kafka[key][1]
            in_ours = key in ours and ours[key][0] <= version <= ours[key][1]
            if in_kafka and in_ours:
                what = "compare" if _known(key, version) else "no schema"
            else:
                what = "kafka only" if in_kafka else "kgroup only"
            out.append((key, version, what))
    return out


def run_wire_checks(kafka: str, kgroup: str, advertised: dict[str, dict[int, tuple[int, int]]], run: str,
                    examples: int = EXAMPLES, only: Callable[[int, int], bool] | None = None,
                    progress: Callable[[VersionResult], None] | None = None) -> list[VersionResult]:
    """Every advertised (API, version): compared, or listed with its reason; then, per API
    both serve, a version neither serves."""
    results = []
    for key, version, what in plan(advertised["kafka"], advertised["kgroup"]):
        if only is not None and not only(key, version):
            continue
        if what == "compare":
            result = check_version(kafka, kgroup, key, version, run, examples)
        elif what == "kafka only":
            reason = (NOT_SERVED.get(key) if key not in advertised["kgroup"]
                      else VERSION_GAPS.get((key, version)) or VERSION_GAPS.get(key))
            result = VersionResult(key, version, "not served" if reason else "diverge", divergence=reason,
                                   detail="" if reason else "served by Kafka 4.4 only, and no reason recorded")
        elif what == "no schema":
            result = VersionResult(key, version, "not comparable",
                                   detail="neither kio 0.6.5 nor kgroup's generated schemas have this version")
        else:
            result = check_version(kafka, kgroup, key, version, run, examples)
            result.detail = "served by kgroup only\n" + result.detail
        results.append(result)
        if progress is not None:
            progress(result)
    # A finding no version of its API shows any more is closed: its entry must go.
    for key in OPEN_FINDINGS:
        compared = [r for r in results if r.api_key == key and r.lines]
        if compared and not any(r.status == "open" for r in compared):
            results.append(VersionResult(key, -1, "diverge", detail=(
                f"{api_name(key)}: agrees with Kafka now: remove its entry from wire.OPEN_FINDINGS")))
    # An explained divergence none of its API's compared versions shows any more is stale.
    for key, entries in WIRE_DIVERGENCES.items():
        compared = [r for r in results if r.api_key == key and r.lines]
        if compared and not any(r.status in ("explained", "open") for r in compared):
            results.append(VersionResult(key, -1, "diverge", detail=(
                f"{api_name(key)}: no version shows what wire.WIRE_DIVERGENCES explains "
                f"({', '.join(e.divergence.kind for e in entries)}) any more: remove or narrow the entry")))
    both = sorted(set(advertised["kafka"]) & set(advertised["kgroup"]))
    for key in both:
        if only is not None and not only(key, -1):
            continue
        beyond = max(advertised["kafka"][key][1], advertised["kgroup"][key][1]) + 1
        result = probe_unserved(kafka, kgroup, key, beyond)
        results.append(result)
        if progress is not None:
            progress(result)
    return results
