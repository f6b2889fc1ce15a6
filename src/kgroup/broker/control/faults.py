"""Faults on demand: answer the next N matching requests with an error, late, or not at all.

How this works: the control API (control_api.py) adds a `FaultSpec` parsed from JSON
(`FaultSpec.parse`, which refuses a bad spec with a one-line reason). The broker's request
edge (server.py) asks `Faults.hit(header, request)` for every decoded request, but only when
`armed` is true — one attribute test per request when no fault is armed. A fault matches a
request by API (Kafka's name, from the wire layer's version table, so every API the broker
serves can be faulted) and, optionally, by group, member (id or static instance id), client
id, topic and partition, as the request names them (wire/subjects.py). Each match uses up
one of the fault's `count`; a fault whose count is used up is gone, and nothing is kept
when the broker stops, so a fault never outlives its count or the broker. Where several
faults match, the oldest acts.

What a fault does, in the order they apply: `delay_ms` holds the request that long (as a
slow network or a slow broker would: later requests on the connection wait behind it), then
`error` answers it with that error code in every error field without processing it, or
`close_connection` closes the client's connection; with neither, the delayed request is
served as usual. `throttle_ms` ("throttle this client") serves the request as usual and
answers it as a client over its quota is answered (KIP-219): the answer's throttle_time_ms
is `throttle_ms` and the connection's next request waits that long.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from collections.abc import Iterable
from typing import Any, Callable

from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.subjects import subjects_of

# A fault's delay is for tests: a minute covers every client timeout worth provoking.
MAX_DELAY_MS = 600_000
MAX_COUNT = 1_000_000
_FIELDS = ("api", "error", "delay_ms", "close_connection", "throttle_ms", "group", "member", "client_id",
           "topic", "partition", "count")


class FaultSpecError(ValueError):
    """A fault spec that cannot be armed; the message is one line saying why."""


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """What to do (`error`, `delay_ms`, `close_connection`) to which requests, how often."""

    api: str
    api_key: int
    error: ErrorCode | None = None
    delay_ms: int = 0
    close_connection: bool = False
    group: str | None = None
    member: str | None = None
    client_id: str | None = None
    topic: str | None = None
    partition: int | None = None
    count: int = 1
    throttle_ms: int = 0

    @classmethod
    def parse(cls, body: Any, served: Iterable[int] | None = None) -> "FaultSpec":
        """A spec from the control API's JSON object; FaultSpecError says what is wrong.
        `served`: the API keys the broker serves (None: every API Kafka has)."""
        if not isinstance(body, dict):
            raise FaultSpecError("a fault is a JSON object such as "
                                 '{"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "count": 3}')
        unknown = sorted(set(body) - set(_FIELDS))
        if unknown:
            raise FaultSpecError(f"unknown field {unknown[0]!r}; a fault has {', '.join(_FIELDS)}")
        api = body.get("api")
        by_name = {ApiKey(k).kafka_name.lower(): ApiKey(k) for k in (ApiKey if served is None else served)}
        if not isinstance(api, str) or api.lower() not in by_name:
            raise FaultSpecError(f"api must name an API the broker serves (e.g. Heartbeat, Fetch), not {api!r}")
        api_key = by_name[api.lower()]
        error = _error(body.get("error"))
        delay_ms = _int(body, "delay_ms", 0, 0, MAX_DELAY_MS)
        close = body.get("close_connection", False)
        if not isinstance(close, bool):
            raise FaultSpecError(f"close_connection must be true or false, not {close!r}")
        if error is not None and close:
            raise FaultSpecError("give error or close_connection, not both")
        throttle_ms = _int(body, "throttle_ms", 0, 0, MAX_DELAY_MS)
        if throttle_ms and (error is not None or close):
            raise FaultSpecError("a throttled request is served: give throttle_ms without error or close_connection")
        if error is None and not close and not delay_ms and not throttle_ms:
            raise FaultSpecError("a fault needs error, delay_ms, throttle_ms or close_connection")
        partition = body.get("partition")
        if partition is not None and (isinstance(partition, bool) or not isinstance(partition, int) or partition < 0):
            raise FaultSpecError(f"partition must be a partition number, not {partition!r}")
        return cls(
            api=api_key.kafka_name, api_key=int(api_key), error=error, delay_ms=delay_ms,
            close_connection=close, group=_str(body, "group"), member=_str(body, "member"),
            client_id=_str(body, "client_id"), topic=_str(body, "topic"), partition=partition,
            count=_int(body, "count", 1, 1, MAX_COUNT), throttle_ms=throttle_ms,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"api": self.api}
        if self.error is not None:
            out["error"] = self.error.name
        if self.delay_ms:
            out["delay_ms"] = self.delay_ms
        if self.close_connection:
            out["close_connection"] = True
        if self.throttle_ms:
            out["throttle_ms"] = self.throttle_ms
        for name in ("group", "member", "client_id", "topic", "partition"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def _error(value: Any) -> ErrorCode | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            code = ErrorCode[value.upper()]
        except KeyError:
            raise FaultSpecError(f"error must be a Kafka error name (e.g. NOT_COORDINATOR), not {value!r}") from None
    else:
        raise FaultSpecError(f"error must be a Kafka error name (e.g. NOT_COORDINATOR), not {value!r}")
    if code is ErrorCode.NONE:
        raise FaultSpecError("error NONE is no fault; leave error out to only delay")
    return code


def _int(body: dict, name: str, default: int, low: int, high: int) -> int:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise FaultSpecError(f"{name} must be a whole number from {low} to {high}, not {value!r}")
    return value


def _str(body: dict, name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise FaultSpecError(f"{name} must be a string, not {value!r}")
    return value


@dataclass(slots=True)
class Fault:
    """An armed spec with what is left of it."""

    id: str
    spec: FaultSpec
    remaining: int
    hits: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, **self.spec.to_json(), "remaining": self.remaining, "hits": self.hits}


@dataclass(frozen=True, slots=True)
class FaultAction:
    """What the request edge does to one request a fault matched."""

    fault_id: str
    delay_ms: int
    error: ErrorCode | None
    close_connection: bool
    throttle_ms: int = 0


class Faults:
    """The armed faults of this broker, oldest first."""

    def __init__(self, topic_id_of: Callable[[str], str | None] = lambda name: None,
                 served: Iterable[int] | None = None) -> None:
        self.armed = False           # the one test the request edge makes per request
        # The APIs a fault may name: those the broker serves (None: every API Kafka has).
        self.served = None if served is None else frozenset(served)
        self._faults: dict[str, Fault] = {}
        self._by_api: dict[int, list[Fault]] = {}
        self._ids = (f"{uuid.uuid4().hex[:8]}-{n}" for n in itertools.count(1))
        # A topic's id (as a string), for requests that name topics by id only.
        self.topic_id_of = topic_id_of

    def add(self, spec: FaultSpec, fault_id: str | None = None) -> Fault:
        """Arm `spec`; `fault_id` names it (a fault armed on several nodes of a cluster has
        the same id on each), else a new id."""
        fault_id = fault_id or next(self._ids)
        if fault_id in self._faults:
            self.remove(fault_id)
        fault = Fault(fault_id, spec, spec.count)
        self._faults[fault.id] = fault
        self._by_api.setdefault(spec.api_key, []).append(fault)
        self.armed = True
        return fault

    def new_id(self) -> str:
        return next(self._ids)

    def list(self) -> list[Fault]:
        return list(self._faults.values())

    def remove(self, fault_id: str) -> bool:
        fault = self._faults.pop(fault_id, None)
        if fault is None:
            return False
        same_api = self._by_api[fault.spec.api_key]
        same_api.remove(fault)
        if not same_api:
            del self._by_api[fault.spec.api_key]
        self.armed = bool(self._faults)
        return True

    def clear(self) -> int:
        count = len(self._faults)
        self._faults.clear()
        self._by_api.clear()
        self.armed = False
        return count

    def hit(self, header: RequestHeader, request: Any) -> FaultAction | None:
        """The action for this request if an armed fault matches it (using one of its count)."""
        candidates = self._by_api.get(header.api_key)
        if not candidates:
            return None
        subjects = None
        for fault in candidates:
            spec = fault.spec
            if spec.client_id is not None and spec.client_id != (header.client_id or ""):
                continue
            if spec.group is not None or spec.member is not None or spec.topic is not None or spec.partition is not None:
                if subjects is None:
                    subjects = subjects_of(request)
                if not self._names(spec, subjects):
                    continue
            fault.hits += 1
            fault.remaining -= 1
            if fault.remaining <= 0:
                self.remove(fault.id)
            return FaultAction(fault.id, spec.delay_ms, spec.error, spec.close_connection, spec.throttle_ms)
        return None

    def _names(self, spec: FaultSpec, subjects: Any) -> bool:
        if spec.group is not None and spec.group not in subjects.groups:
            return False
        if spec.member is not None and spec.member not in subjects.members:
            return False
        topics: set[str] | None = None
        if spec.topic is not None:
            topics = {spec.topic}
            topic_id = self.topic_id_of(spec.topic)
            if topic_id is not None:
                topics.add(topic_id)
            if not topics & subjects.topics:
                return False
        if spec.partition is not None:
            return any(p == spec.partition and (topics is None or t in topics) for t, p in subjects.partitions)
        return True

