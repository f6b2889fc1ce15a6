"""Requests that name only things that do not exist, for every API a broker serves, and the
error codes they are answered with (tests/integration/test_missing_resources.py).

`missing_request(api_key, version, names)` builds the request from the API's kio schema:
every field whose type names a resource -- a topic (TopicName), a topic id (a UUID named
*topic_id), a partition (partition indexes, of the missing topic), a group (GroupId, a
FindCoordinator key, a config or ACL resource name), a transactional id (TransactionalId), a
producer id (ProducerId), a member id, a user -- names one that does not exist; every array
has one entry; every other field gets an ordinary valid value (`NEUTRAL`, by field name),
so that what the answer says is about the missing resources and nothing else. `OVERRIDES`
is the short list of fields set by hand where the generic values would make a request
invalid or change something (validate_only for creations, no auto-creation, no upsert).

`answer_codes(response)` lists every error-code field of the answer with its path, e.g.
``topics[].partitions[].error_code=UNKNOWN_TOPIC_OR_PARTITION``; the broker closing the
connection instead is ``(connection closed)``. The expected answers are the table in
docs/protocol.md ("Requests for resources that do not exist"), asked of Apache Kafka 4.4:
`python -m tests.integration.missing_resources` prints that table from a fresh reference
broker and kgroup's version ranges.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import socket
import struct
import types
import typing
import uuid
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64, i64Timedelta

from kgroup.kafka_uuid import random_uuid_text
from kgroup.wire.codec import decode_response, encode_request, request_class
from kgroup.wire.record_batch import build_batch
from kgroup.broker.concerns import SERVED
from kgroup.wire.api_keys import ApiKey
from tests.integration.waits import until

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
SECTION = "## Requests for resources that do not exist"
CLOSED = "(connection closed)"
MISSING_PRODUCER_ID = 987_654_321
_SIZE = struct.Struct(">i")


@dataclasses.dataclass(frozen=True)
class Names:
    """The names of things that do not exist, one set per request (`for_api`)."""

    topic: str
    group: str
    transactional_id: str
    member: str
    user: str
    topic_id: uuid.UUID

    @classmethod
    def for_api(cls, api_key: int) -> "Names":
        tag = f"{api_key}-{uuid.uuid4().hex[:10]}"
        # A member id as Kafka makes them (a Uuid in URL-safe base64): the consumer and share
        # group APIs refuse other shapes before they look for the member.
        member = random_uuid_text(os.urandom)
        return cls(f"missing-topic-{tag}", f"missing-group-{tag}", f"missing-txn-{tag}",
                   member, f"missing-user-{tag}", uuid.uuid4())


# ---- the requests ---------------------------------------------------------------------------

TOPIC_RESOURCE, GROUP_RESOURCE = 2, 32          # config and ACL resource types
# Values of fields that name nothing, by field name: valid, ordinary, not waiting long.
NEUTRAL: dict[str, Any] = {
    "acks": -1, "timeout": 5_000, "retention_time": -1, "transaction_timeout": 60_000, "session_timeout": 10_000,
    "rebalance_timeout": 10_000, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
    "partition_max_bytes": 1 << 20, "max_records": 100, "batch_size": 100, "isolation_level": 0,
    "session_id": 0, "session_epoch": -1, "share_session_epoch": 0, "replica_id": -1,
    "replica_epoch": -1, "current_leader_epoch": -1, "last_fetched_epoch": -1,
    "log_start_offset": -1, "high_watermark": -1, "fetch_offset": 0, "timestamp": -1,
    "committed_offset": 0, "committed_leader_epoch": -1, "committed_metadata": "",
    "generation_id": 1, "generation_id_or_member_epoch": 1, "member_epoch": 1, "producer_epoch": 0,
    "key_type": 0, "protocol_type": "consumer", "protocol_name": "range", "reason": None,
    "group_instance_id": None, "instance_id": None, "rack_id": None, "cluster_id": None,
    "client_software_name": "kgroup-tests", "client_software_version": "1",
    "mechanism": "PLAIN", "auth_bytes": b"", "num_partitions": 1, "replication_factor": 1,
    "count": 2, "offset": 0, "start_offset": 0, "first_offset": 0, "last_offset": 0,
    "acknowledge_types": (1,), "include_synonyms": False, "include_documentation": False,
    "include_authorized_operations": False, "include_topic_authorized_operations": False,
    "include_cluster_authorized_operations": False, "include_fenced_brokers": False,
    "endpoint_type": 1, "require_stable": False, "verify_only": False, "committed": True,
    "validate_only": True, "allow_auto_topic_creation": False, "duration_filter": -1,
    "server_assignor": None, "subscribed_topic_regex": None, "iterations": 8192,
    "resource_type": TOPIC_RESOURCE, "resource_type_filter": TOPIC_RESOURCE,
    "resource_pattern_type": 3, "pattern_type_filter": 3, "principal": "User:missing",
    "principal_filter": "User:missing", "host": "*", "host_filter": "*", "operation": 3,
    "permission_type": 3, "config_operation": 0, "value": "1000",
    "replica_directory_id": uuid.UUID(int=0), "configuration_keys": None, "states_filter": (),
    "types_filter": (), "state_filters": (), "salt": b"salt", "salted_password": b"x" * 32,
}
# Fields set by hand (api key -> field -> value): what would otherwise create or change
# something, or be invalid beside the other fields whatever the resource.
OVERRIDES: dict[int, dict[str, Any]] = {
    0: {"transactional_id": None},                   # a plain idempotent-free produce
    3: {"topic_id": uuid.UUID(int=0)},               # Metadata: by name
    19: {"assignments": (), "configs": ()},          # CreateTopics: validate only
    20: {"topic_id": uuid.UUID(int=0)},              # DeleteTopics: by name
    37: {"assignments": None},
    51: {"upsertions": ()},                          # AlterUserScramCredentials: delete only
    78: {"acknowledgement_batches": (), "forgotten_topics_data": ()},  # ShareFetch opening a session
    79: {"share_session_epoch": 1},                  # ShareAcknowledge in a session (that does not exist)
}
CONFIG_NAMES = {33: "retention.ms", 44: "retention.ms", 32: None}


def missing_request(api_key: int, version: int, names: Names) -> Any:
    cls = request_class(api_key, version)
    return _entity(cls, api_key, names, ())


def _inner(hint: Any) -> Any:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(hint) if a is not types.NoneType]
        if len(args) == 1:
            return args[0]
    return hint


def _entity(cls: type, api_key: int, names: Names, path: tuple[str, ...]) -> Any:
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        values[f.name] = _value(hints[f.name], f.name, api_key, names, path)
    return cls(**values)


def _value(hint: Any, name: str, api_key: int, names: Names, path: tuple[str, ...]) -> Any:
    overrides = OVERRIDES.get(api_key, {})
    t = _inner(hint)
    optional = t is not hint
    if name in overrides and (overrides[name] is not None or optional):
        return overrides[name]
    if typing.get_origin(t) is tuple:
        item = _inner(typing.get_args(t)[0])
        if name in NEUTRAL and not dataclasses.is_dataclass(item):
            value = NEUTRAL[name]
            return (None if optional else ()) if value is None else tuple(value)
        return (_value(item, name, api_key, names, path + (name,)),)
    if dataclasses.is_dataclass(t):
        return _entity(t, api_key, names, path + (name,))
    resource = _resource(t, name, api_key, names, path)
    if resource is not None:
        return _typed(t, resource)
    if name == "mechanism" and issubclass(t, int):
        return _typed(t, 1)                         # SCRAM-SHA-256 (a str mechanism is SASL's)
    if name in NEUTRAL and (NEUTRAL[name] is not None or optional):
        return _typed(t, NEUTRAL[name])
    return _typed(t, _default(t, name, api_key))


def _resource(t: type, name: str, api_key: int, names: Names, path: tuple[str, ...]) -> Any | None:
    """The missing thing this field names, or None if it names nothing."""
    tname = getattr(t, "__name__", "")
    if tname == "TopicName" or (name in ("topic", "topic_name")) or (name == "name" and path and "topic" in path[-1]):
        return names.topic
    if t is uuid.UUID and "topic_id" in name:
        return names.topic_id
    if tname == "GroupId" or name in ("coordinator_keys",):
        return names.group
    if tname == "TransactionalId":
        return names.transactional_id
    if tname == "ProducerId" or name == "producer_id_filters":
        return MISSING_PRODUCER_ID
    if name in ("partition", "partition_index", "partitions", "partition_indexes", "index"):
        return 0
    if name == "member_id":
        return names.member
    if name in ("resource_name", "resource_name_filter"):
        return names.topic
    if name == "name" and path and path[-1] in ("users", "deletions", "upsertions"):
        return names.user
    if name == "name" and path and path[-1] == "configs":
        return CONFIG_NAMES.get(api_key) or "retention.ms"
    return None


def _default(t: type, name: str, api_key: int) -> Any:
    if t is bool:
        return False
    if t is uuid.UUID:
        return uuid.UUID(int=0)
    if issubclass(t, (i32Timedelta, i64Timedelta)):
        return 0
    if issubclass(t, Records):
        return build_batch([(b"k", b"v", [], 1_700_000_000_000)])
    if issubclass(t, str):
        return ""
    if issubclass(t, bytes):
        return b""
    if issubclass(t, int):
        return 0
    if issubclass(t, float):         # a quota's value (AlterClientQuotas)
        return 0.0
    raise TypeError(f"no value for {name}: {t!r} (api {api_key})")


def _typed(t: type, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(t, type) and issubclass(t, (i32Timedelta, i64Timedelta)):
        return t.parse(datetime.timedelta(milliseconds=int(value)))
    if isinstance(t, type) and issubclass(t, Records):
        return Records(value) if not isinstance(value, Records) else value
    if isinstance(t, type) and issubclass(t, float):
        return float(value)
    if isinstance(t, type) and t not in (bool, uuid.UUID) and issubclass(t, (int, str, bytes)):
        return t(value)
    return value


# ---- the answers ----------------------------------------------------------------------------


def answer_codes(response: Any) -> str:
    """Every *error_code field of a response with its path, in order, repeats dropped."""
    out: list[str] = []
    _codes(response, "", out)
    return "; ".join(dict.fromkeys(out))


def _codes(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, tuple):
        for item in value:
            _codes(item, path + "[]", out)
        return
    if not dataclasses.is_dataclass(value):
        return
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        where = f"{path}.{f.name}" if path else f.name
        if f.name.endswith("error_code") and isinstance(v, int):
            out.append(f"{where}={ErrorCode(int(v)).name.upper()}")
        else:
            _codes(v, where, out)


def ask(host: str, port: int, api_key: int, version: int, request: Any, timeout: float = 20) -> str:
    """Send one request on a new connection; its answer's codes, or CLOSED."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(encode_request(api_key, version, 7, "missing-resources", request))
        try:
            head = _read(sock, 4)
        except ConnectionError:
            return CLOSED
        (size,) = _SIZE.unpack(head)
        _, response = decode_response(api_key, version, _read(sock, size))
        return answer_codes(response)


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except (ConnectionResetError, TimeoutError) as exc:
            raise ConnectionError(str(exc)) from None
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def served() -> dict[int, tuple[str, int, int]]:
    """api key -> (name, min, max) of every API kgroup advertises."""
    return {r.api_key: (r.name, r.min_version, r.max_version) for r in SERVED.values()}


# A broker that has just started creates its internal topics (Kafka's __consumer_offsets and
# __transaction_state) on first use; until they are loaded, answers say so. Asked again.
TRANSIENT = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")


def warm_up(host: str, port: int) -> None:
    """FindCoordinator for a group and for a transactional id until both are answered: Kafka
    creates its group and transaction topics when first asked."""
    cls = request_class(10, 3)
    for key_type in (0, 1):
        until(lambda: ask(host, port, 10, 3, cls(key=f"warm-up-{key_type}", key_type=i8(key_type)))
              == "error_code=NONE", timeout=60, interval=0.5, what=f"FindCoordinator key type {key_type}")


def answers(bootstrap: str, versions: dict[int, int]) -> dict[int, str]:
    """api key -> the answer's codes, for the missing-resource request at that version."""
    host, port = bootstrap.rsplit(":", 1)
    warm_up(host, int(port))
    out = {}
    for api_key, version in sorted(versions.items()):
        request = missing_request(api_key, version, Names.for_api(api_key))

        def settled() -> bool:
            # A transient code (a coordinator still loading) is asked again; the last answer
            # stays in `out` either way, so a code that never settles is what the table sees.
            out[api_key] = ask(host, int(port), api_key, version, request)
            return not any(code in out[api_key] for code in TRANSIENT)

        try:
            until(settled, timeout=60, interval=0.5, what=f"a settled answer to API {api_key}")
        except AssertionError:
            pass
    return out


# ---- the table in docs/protocol.md ----------------------------------------------------------

ROW = re.compile(r"^\| (\d+) \| (\w+) \| (\d+) \| `(.*)` \|$")
DIFFERS = "### Where kgroup answers differently, on purpose"
DIFFERS_ROW = re.compile(r"^\| (\d+) \| (\w+) \| `(.*)` \| .* \|$")


def _rows(heading: str, row: re.Pattern, path: Path) -> list[re.Match]:
    """The table rows under `heading`, up to the next heading."""
    text = path.read_text()
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    lines = text[start:end if end >= 0 else len(text)].splitlines()
    return [m for m in map(row.match, lines) if m]


def read_table(path: Path = DOCS) -> dict[int, tuple[str, int, str]]:
    """api key -> (name, version, answer) from the section's table."""
    return {int(m[1]): (m[2], int(m[3]), m[4]) for m in _rows(SECTION, ROW, path)}


def read_differences(path: Path = DOCS) -> dict[int, str]:
    """api key -> kgroup's own answer, for the APIs where it differs from Kafka on purpose."""
    return {int(m[1]): m[3] for m in _rows(DIFFERS, DIFFERS_ROW, path)}


def format_table(rows: dict[int, tuple[str, int, str]]) -> str:
    lines = ["| Key | API | Version | Kafka 4.4's answer (every error code, by field) |", "|---|---|---|---|"]
    for api_key, (name, version, answer) in sorted(rows.items()):
        lines.append(f"| {api_key} | {name} | {version} | `{answer}` |")
    return "\n".join(lines)


def broker_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) the broker at `bootstrap` advertises (ApiVersions v3)."""
    host, port = bootstrap.rsplit(":", 1)
    cls = request_class(18, 3)
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(encode_request(18, 3, 1, "missing-resources",
                                    cls(client_software_name="kgroup-tests", client_software_version="1")))
        (size,) = _SIZE.unpack(_read(sock, 4))
        _, response = decode_response(18, 3, _read(sock, size))
    return {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys}


def table_from(bootstrap: str) -> str:
    """The table, asked of the Kafka at `bootstrap` (versions: the highest both serve)."""
    theirs = broker_versions(bootstrap)
    ours = served()
    # An API Kafka serves without advertising it (the telemetry pair, with no metrics
    # reporter plug-in): asked at kgroup's newest version.
    versions = {k: min(hi, theirs[k][1]) if k in theirs else hi for k, (_, lo, hi) in ours.items()}
    got = answers(bootstrap, versions)
    return format_table({k: (ours[k][0], versions[k], got[k]) for k in versions})


def main(argv: list[str]) -> None:
    """Print the table from a fresh Apache Kafka 4.4, or from the one at HOST:PORT."""
    if argv:
        print(table_from(argv[0]))
        return
    from kgroup.testing.reference import ReferenceKafka

    with ReferenceKafka() as kafka:
        print(table_from(kafka.bootstrap))


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
