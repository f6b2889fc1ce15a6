"""Client quotas in the broker: where they are kept, and what the request path asks of them.

How this works. The quotas set with AlterClientQuotas (`kafka-client-quotas`, `kafka-configs
--entity-type users|clients|ips`, `kgroup quotas alter`) live in one document in the data
dir, `configs/quotas.json` (a SharedJsonFile: changed under a lock, replaced atomically, so
an acknowledged change survives kill -9), shared by the nodes of a cluster; each node
re-reads it when it changed (`refresh`, polled with the other shared files), so a change is
in force everywhere within a second, and at once on the node that made it.

Enforcement (core/quotas.py has the rules): `on` is true while any user or client-id quota
is set, and the request path (requests.py) measures nothing while it is false. When on,
`throttle_ms` records what one request used — a Produce request's size against
producer_byte_rate, a Fetch answer's size against consumer_byte_rate, the CPU time the
request took against request_percentage (100 = one thread's whole time) — on the rate of
the entity whose quota applies, and answers how long the client must wait: the longest of
the quotas it is over. The request path puts that time in the answer's throttle_time_ms and
mutes the connection for it (KIP-219). A Fetch is decided before its answer is built
(`fetch_throttle_ms`): when it is throttled its answer goes out empty and its bytes are
taken back off the consumer rate, as Kafka does. `throttled` is the test bed's fault: a client id
throttled for a given time on its next requests, with no quota set.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kgroup.core.quotas import (CLIENT_ID, CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, USER,
                                Entity, Filter, QuotaRefused, Rate, apply_ops, check_op, entity_of, matches,
                                quota_for)
from kgroup.storage.errors import CorruptDataError
from kgroup.storage.shared_file import SharedJsonFile

QUOTAS_FILE = Path("configs") / "quotas.json"
# CPU nanoseconds as a percentage of one thread's second (Kafka's nanosToPercentage).
NANOS_TO_PERCENT = 100.0 / 1e9

Ops = tuple[tuple[str, float, bool], ...]


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class ClientQuotas:
    """The quotas of users and client ids, and the rates they are enforced on."""

    def __init__(self, data_dir: Path | str, clock=_now_ms) -> None:
        self.file = SharedJsonFile(Path(data_dir) / QUOTAS_FILE)
        self.clock = clock
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.rates: dict[tuple[str, Entity], Rate] = {}
        self.on = False
        self._load(self.file.read())

    # ---- the document -------------------------------------------------------------------------

    @staticmethod
    def _decode(doc: Mapping[str, Any]) -> dict[Entity, dict[str, float]]:
        try:
            return {tuple((str(k), None if n is None else str(n)) for k, n in e["entity"]):
                    {str(k): float(v) for k, v in e["values"].items()} for e in doc.get("entities", [])}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptDataError(f"cannot read client quotas {QUOTAS_FILE}: {exc}") from exc

    @staticmethod
    def _encode(quotas: Mapping[Entity, Mapping[str, float]]) -> list[dict[str, Any]]:
        return [{"entity": [list(c) for c in entity], "values": dict(sorted(values.items()))}
                for entity, values in sorted(quotas.items(), key=repr) if values]

    def _load(self, doc: Mapping[str, Any]) -> None:
        self.quotas = self._decode(doc)
        # Rates whose entity lost its quota start afresh if one is set again.
        self.rates = {}
        self.on = any(entity[0][0] in (CLIENT_ID, USER) for entity in self.quotas)

    def refresh(self) -> bool:
        """Re-read the document if another node or tool changed it."""
        if not self.file.changed():
            return False
        self._load(self.file.read())
        return True

    # ---- AlterClientQuotas / DescribeClientQuotas ---------------------------------------------

    def alter(self, entries: Iterable[tuple[Iterable[tuple[str, str | None]], Ops]],
              validate_only: bool) -> list[QuotaRefused | None]:
        """Each entry checked apart; the good ones applied together (unless validate_only).
        Returns, per entry, its refusal or None."""
        checked: list[tuple[Entity, Ops] | QuotaRefused] = []
        for components, ops in entries:
            try:
                entity = entity_of(components)
                for key, value, remove in ops:
                    check_op(entity, key, value, remove)
                checked.append((entity, ops))
            except QuotaRefused as refused:
                checked.append(refused)
        good = [c for c in checked if not isinstance(c, QuotaRefused)]
        if good and not validate_only:
            with self.file.changing() as doc:
                quotas = self._decode(doc)
                for entity, ops in good:
                    quotas[entity] = apply_ops(quotas.get(entity, {}), ops)
                doc["entities"] = self._encode(quotas)
            self._load(self.file.read())
        return [c if isinstance(c, QuotaRefused) else None for c in checked]

    def describe(self, f: Filter) -> list[tuple[Entity, dict[str, float]]]:
        return [(entity, values) for entity, values in sorted(self.quotas.items(), key=repr)
                if values and matches(f, entity)]

    # ---- enforcement --------------------------------------------------------------------------

    def _charge(self, key: str, user: str, client_id: str, amount: float, now: int) -> int:
        found = quota_for(self.quotas, key, user, client_id)
        if found is None:
            return 0
        quota, shared = found
        rate = self.rates.get((key, shared))
        if rate is None:
            rate = self.rates[(key, shared)] = Rate(now)
        rate.record(amount, now)
        return rate.throttle_ms(quota, now)

    def throttle_ms(self, user: str, client_id: str | None, produced: int, fetched: int, cpu_ns: int) -> int:
        """Record one request's use; how long its client must wait (0: not over any quota)."""
        now, client = self.clock(), client_id or ""
        wait = self._charge(REQUEST_PERCENTAGE, user, client, cpu_ns * NANOS_TO_PERCENT, now)
        if produced:
            wait = max(wait, self._charge(PRODUCER_BYTE_RATE, user, client, produced, now))
        if fetched:
            wait = max(wait, self._charge(CONSUMER_BYTE_RATE, user, client, fetched, now))
        return wait

    def fetch_throttle_ms(self, user: str, client_id: str | None, fetched: int, cpu_ns: int) -> int:
        """`throttle_ms` for a Fetch whose answer would carry `fetched` bytes; when it must
        wait, the answer carries nothing, so those bytes are not counted (Kafka's
        unrecordQuotaSensor)."""
        wait = self.throttle_ms(user, client_id, 0, fetched, cpu_ns)
        if wait > 0 and fetched:
            self._charge(CONSUMER_BYTE_RATE, user, client_id or "", -fetched, self.clock())
        return wait
