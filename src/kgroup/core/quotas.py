"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546): what may be set on which entity,
which quota applies to a client, how its rate is measured and how long it is throttled.

How it works. A quota entity is a set of (type, name) pairs: `user` and/or `client-id`, or
`ip` alone; a null name is the type's default entity. `check_alter` validates one
AlterClientQuotas entry as Kafka 4.4 does (INVALID_REQUEST for an empty or unknown entity
type, a type named twice, `ip` with another type, a bad ip, a key the entity cannot carry, a
value not above 0, a fraction where Kafka wants a whole number; a type named twice keeps its
last name, as Kafka's map does). `describe_filter`/`matches`
are DescribeClientQuotas' filter: each component matches a type by exact name, by the
default entity or by any name (the entity must have the type), and `strict` leaves out
entities with types the filter does not name.

Enforcement: `quota_for` finds the quota of one key for a (user, client-id) in Kafka's order
of precedence (user+client, user+default client, user, default user+client, default
user+default client, default user, client, default client) and names the entity it was
found on; clients sharing that entity share one `Rate`. A `Rate` is Kafka's sampled rate:
`samples` windows of `window_ms` each (quota.window.num = 11, quota.window.size.seconds = 1),
the rate being the sum over the live windows divided by their elapsed time (at least
samples - 1 full windows, so a new client is not throttled for its first burst). Over the
quota, the throttle time is Kafka's: (rate - quota) / quota * the window, capped at the
whole window span. Pure: the caller gives `now_ms`.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# The keys an entity may carry, and whether Kafka wants a whole number (its LONG configs).
CLIENT_KEYS = {PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False,
               CONTROLLER_MUTATION_RATE: False}
IP_KEYS = {CONNECTION_CREATION_RATE: True}
EXACT, DEFAULT, ANY = 0, 1, 2
INVALID_REQUEST, UNSUPPORTED_VERSION = 42, 35
# Kafka's defaults: quota.window.num, quota.window.size.seconds.
WINDOW_NUM, WINDOW_MS = 11, 1000

Entity = tuple[tuple[str, str | None], ...]        # sorted by type


class QuotaRefused(Exception):
    """An entry or filter Kafka refuses: its error code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def entity_of(components: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity of an AlterClientQuotas entry, checked (QuotaRefused)."""
    seen: dict[str, str | None] = {}
    for kind, name in components:
        seen[kind] = name        # a type named twice: its last name (Kafka builds a map)
    if not seen:
        raise QuotaRefused(INVALID_REQUEST, "Invalid empty client quota entity")
    for kind in seen:
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaRefused(INVALID_REQUEST, f"Unhandled client quota entity type: {kind}")
    if seen.get(USER) == "":
        raise QuotaRefused(INVALID_REQUEST, "Empty user not supported")
    if IP in seen:
        if len(seen) > 1:
            # (Kafka 4.4's text, "shouldnot" and all.)
            raise QuotaRefused(INVALID_REQUEST, "Invalid quota entity combination, IP entity shouldnot be combined "
                                                "with User or ClientId")
        if seen[IP] is not None:
            try:
                ipaddress.ip_address(seen[IP])
            except ValueError:
                raise QuotaRefused(INVALID_REQUEST, f"{seen[IP]} is not a valid IP or resolvable host.") from None
    return tuple(sorted(seen.items()))


def check_op(entity: Entity, key: str, value: float, remove: bool) -> None:
    """One op of an entry: a key the entity may carry, a value Kafka accepts."""
    keys = IP_KEYS if entity[0][0] == IP else CLIENT_KEYS
    if key not in keys:
        raise QuotaRefused(INVALID_REQUEST, f"Invalid configuration key {key}")
    if remove:
        return
    if math.isnan(value) or math.isinf(value):
        raise QuotaRefused(INVALID_REQUEST, f"Quota {key} must be a finite number")
    if keys[key] and value != int(value):
        raise QuotaRefused(INVALID_REQUEST, f"{key} cannot be a fractional value.")
    if value <= 0:
        raise QuotaRefused(INVALID_REQUEST, f"Quota {key} must be greater than 0")


def apply_ops(current: Mapping[str, float], ops: Iterable[tuple[str, float, bool]]) -> dict[str, float]:
    """The entity's quotas after the ops (checked already)."""
    values = dict(current)
    for key, value, remove in ops:
        if remove:
            values.pop(key, None)
        else:
            values[key] = float(value)
    return values


# ---- DescribeClientQuotas' filter -------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Filter:
    components: tuple[tuple[str, int, str | None], ...]
    strict: bool


def describe_filter(components: Iterable[tuple[str, int, str | None]], strict: bool) -> Filter:
    """A checked filter (QuotaRefused with Kafka's code otherwise)."""
    seen: set[str] = set()
    checked = []
    for kind, match_type, name in components:
        if not kind:
            raise QuotaRefused(INVALID_REQUEST, "Invalid empty entity type.")
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaRefused(UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
        if kind in seen:
            raise QuotaRefused(INVALID_REQUEST, f"Entity type {kind} cannot appear more than once in the filter.")
        seen.add(kind)
        if match_type == EXACT and name is None:
            raise QuotaRefused(INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
        if match_type == DEFAULT and name is not None:
            raise QuotaRefused(INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match "
                                                "string.")
        if match_type == ANY and name is not None:
            raise QuotaRefused(INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match "
                                                "string.")
        if match_type not in (EXACT, DEFAULT, ANY):
            raise QuotaRefused(INVALID_REQUEST, f"Unknown match type {match_type}")
        checked.append((kind, match_type, name))
    if IP in seen and len(seen) > 1:
        raise QuotaRefused(INVALID_REQUEST, "Invalid entity filter component combination. IP filter component "
                                            "should not be used with user or clientId filter component.")
    return Filter(tuple(checked), strict)


def matches(f: Filter, entity: Entity) -> bool:
    names = dict(entity)
    for kind, match_type, name in f.components:
        if kind not in names:
            return False
        if match_type == EXACT and names[kind] != name:
            return False
        if match_type == DEFAULT and names[kind] is not None:
            return False
    return not f.strict or len(names) == len(f.components)


# ---- which quota applies ----------------------------------------------------------------------

def _precedence(user: str, client_id: str) -> tuple[tuple[Entity, Entity], ...]:
    """(where the quota is set, whose clients share its rate) in Kafka's order."""
    both, just_user, just_client = ((USER, user), (CLIENT_ID, client_id)), ((USER, user),), ((CLIENT_ID, client_id),)
    return (
        (((CLIENT_ID, client_id), (USER, user)), both),
        (((CLIENT_ID, None), (USER, user)), both),
        (((USER, user),), just_user),
        (((CLIENT_ID, client_id), (USER, None)), both),
        (((CLIENT_ID, None), (USER, None)), both),
        (((USER, None),), just_user),
        (((CLIENT_ID, client_id),), just_client),
        (((CLIENT_ID, None),), just_client),
    )


def quota_for(quotas: Mapping[Entity, Mapping[str, float]], key: str, user: str,
              client_id: str) -> tuple[float, Entity] | None:
    """(the quota of `key` for this client, the entity whose clients share its rate), or None."""
    for where, shared in _precedence(user, client_id):
        values = quotas.get(where)
        if values is not None and key in values:
            return values[key], shared
    return None


# ---- the sampled rate -------------------------------------------------------------------------

class Rate:
    """Kafka's SampledStat rate over `samples` windows of `window_ms` (module comment)."""

    __slots__ = ("samples", "window_ms", "starts", "values", "current")

    def __init__(self, now_ms: int, samples: int = WINDOW_NUM, window_ms: int = WINDOW_MS) -> None:
        self.samples, self.window_ms = samples, window_ms
        self.starts = [now_ms] + [now_ms - samples * window_ms] * (samples - 1)   # not live yet
        self.values = [0.0] * samples
        self.current = 0

    def _advance(self, now_ms: int) -> None:
        # A new window when the current one is full; samples older than the whole span
        # count nothing (Kafka's purgeObsoleteSamples) and are left out of the elapsed time.
        if now_ms - self.starts[self.current] >= self.window_ms:
            self.current = (self.current + 1) % self.samples
            self.starts[self.current], self.values[self.current] = now_ms, 0.0
        span = self.samples * self.window_ms
        for i in range(self.samples):
            if now_ms - self.starts[i] >= span:
                self.values[i] = 0.0

    def record(self, value: float, now_ms: int) -> None:
        self._advance(now_ms)
        self.values[self.current] += value

    def window_size_ms(self, now_ms: int) -> int:
        """The elapsed time the rate is over: from the oldest live sample, at least
        samples - 1 full windows."""
        self._advance(now_ms)
        span = self.samples * self.window_ms
        oldest = min((s for s in self.starts if now_ms - s < span), default=now_ms)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return elapsed

    def rate(self, now_ms: int) -> float:
        """Per second."""
        window = self.window_size_ms(now_ms)        # first: it drops what expired
        return sum(self.values) / (window / 1000)

    def throttle_ms(self, quota: float, now_ms: int) -> int:
        """How long the client waits to be back at `quota` (0 when within it)."""
        observed = self.rate(now_ms)
        if observed <= quota:
            return 0
        if quota <= 0:
            return self.samples * self.window_ms
        wait = (observed - quota) / quota * self.window_size_ms(now_ms)
        return min(int(round(wait)), self.samples * self.window_ms)


# ---- the order Kafka answers in ---------------------------------------------------------------

def _java_hash(text: str | None) -> int:
    """Java's String.hashCode (over UTF-16 code units), 0 for null."""
    if text is None:
        return 0
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h


def _hash_map_order(hashes: list[int], initial: int | None = None) -> list[int]:
    """The indexes of keys in a java.util.HashMap's iteration order (inserted in index order;
    `initial`: the capacity it was made with, None for the default)."""
    capacity = 16
    if initial is not None:
        capacity = 1
        while capacity < initial:
            capacity *= 2
    for size in range(1, len(hashes) + 1):
        if size > int(capacity * 0.75):      # Java grows the table past its load factor
            capacity *= 2
    return sorted(range(len(hashes)), key=lambda i: ((hashes[i] ^ (hashes[i] >> 16)) & (capacity - 1), i))


def kafka_entity_order(components: list[tuple[str, str | None]], made_for: int | None = None) -> list[int]:
    """Kafka answers an entity's components in its HashMap's order (by type), a map made for
    the number of components the request named."""
    return _hash_map_order([_java_hash(kind) for kind, _ in components],
                           len(components) if made_for is None else made_for)


def kafka_answer_order(entities: list[list[tuple[str, str | None]]]) -> list[int]:
    """AlterClientQuotas answers its entries in the order of a HashMap keyed by entity
    (ClientQuotaEntity's hash: Objects.hash of its map)."""
    return _hash_map_order([(31 + sum(_java_hash(k) ^ _java_hash(n) for k, n in e)) & 0xFFFFFFFF
                            for e in entities])
