"""Both brokers of a comparison, and one scenario's view of one of them.

How this works: a `Side` is one running broker behind its `RecordingProxy`: the broker
advertises the proxy's address (Kafka on a listener of its own, kgroup on its only one), so
every client connection of a scenario — the first one and those to the coordinator and the
partition leaders — passes the proxy. A `Pair` holds the Kafka side and the kgroup side and
runs a scenario on both at once, each on its own thread and event loop, with the same
`Names` (groups, topics, client ids unique to this run of this scenario), then compares the
two transcripts (`transcript.compare`).

A scenario is an `async def run(t: Target)`: `t.raw()` opens raw connections, `t.address`
is the bootstrap for real clients, `t.client_id(...)` names a client whose requests the proxy
records, `t.add(label, value)` and `t.timing(...)` write the transcript.
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from kgroup.conformance.errors import summary
from kgroup.conformance.proxy import RecordingProxy, Watch
from kgroup.conformance.messages import api_name, request
from kgroup.conformance.raw import ConnectionClosed, RawClient
from kgroup.conformance.transcript import Comparison, Transcript, compare
from kgroup.broker.concerns import SERVED as SUPPORTED_APIS

SCENARIO_TIMEOUT = 90.0
HEARTBEAT, SYNC_GROUP = 12, 14
# Outcomes of a real client that depend on when its timers fired, not on what the broker does
# (raw scenarios compare every answer exactly), by API key:
# - "heartbeat timing": a classic Heartbeat is answered NONE or REBALANCE_IN_PROGRESS
#   depending on whether its timer fired inside a rebalance;
# - "rebalance rounds": a SyncGroup answered REBALANCE_IN_PROGRESS is a round that another
#   (re)join overtook; how many rounds a group takes to settle depends on how late each
#   member's JoinGroup and SyncGroup arrive on a loaded machine. The round that settles
#   (JoinGroup and SyncGroup answered NONE) and the group it leaves are still compared.
_TIMING_OUTCOMES = {HEARTBEAT: ("NONE", "REBALANCE_IN_PROGRESS"), SYNC_GROUP: ("REBALANCE_IN_PROGRESS",)}


@dataclass(frozen=True)
class Names:
    """Names unique to one run of one scenario, the same on both brokers."""

    scenario: str
    run: str

    @property
    def prefix(self) -> str:
        return f"cf-{self.scenario}-{self.run}"

    def group(self, suffix: str = "g") -> str:
        return f"{self.prefix}-{suffix}"

    def topic(self, suffix: str = "t") -> str:
        return f"{self.prefix}-{suffix}"

    def client(self, suffix: str = "c") -> str:
        return f"{self.prefix}-{suffix}"


@dataclass
class Side:
    """One broker behind its recording proxy."""

    name: str
    proxy: RecordingProxy
    direct: str                        # the broker's own bootstrap (not recorded)
    handle: Any = None                 # ReferenceKafka or kgroup.testing.Broker

    @property
    def address(self) -> str:
        return self.proxy.address


class ScenarioFailed(Exception):
    """A scenario could not run to its end on one broker (its transcript says how far)."""


class Target:
    """A scenario's view of one broker."""

    def __init__(self, side: Side, names: Names) -> None:
        self.side = side
        self.name = side.name
        self.names = names
        self.transcript = Transcript()
        self._raws: list[RawClient] = []
        self._watch: Watch = side.proxy.watch(names.prefix)

    @property
    def address(self) -> str:
        return self.side.address

    @property
    def is_kafka(self) -> bool:
        return self.name == "kafka"

    def client_id(self, suffix: str = "c") -> str:
        return self.names.client(suffix)

    async def raw(self, suffix: str = "raw", user: str | None = None) -> RawClient:
        """A raw connection through the proxy; with `user`, authenticated (SCRAM-SHA-256,
        unrecorded) as that user of the secured pair."""
        client = await RawClient.open(self.address, self.client_id(suffix))
        self._raws.append(client)
        if user is not None:
            from kgroup.conformance.sasl import USERS, scram_login  # noqa: PLC0415

            await scram_login(client, user, USERS[user])
        return client

    def add(self, label: str, value: Any) -> None:
        self.transcript.add(label, value)

    async def ask(self, raw: RawClient, label: str, req: Any, **options: Any) -> Any:
        """Send `req` on `raw` and write its whole answer into the transcript (or CLOSED
        when the broker closes the connection instead); returns the answer (None if closed)."""
        try:
            response = await raw.call(req, **options)
        except ConnectionClosed:
            self.add(f"{label} ({api_name(int(req.__api_key__))} v{int(req.__version__)})", "CLOSED")
            return None
        self.add(f"{label} ({api_name(int(req.__api_key__))} v{int(req.__version__)})", response)
        return response

    async def answer(self, label: str, task: "asyncio.Future[Any]", req: Any) -> Any:
        """Await a request started with `raw.start(req)` and write its answer as `ask` does."""
        try:
            response = await task
        except ConnectionClosed:
            response = None
        self.add(f"{label} ({api_name(int(req.__api_key__))} v{int(req.__version__)})",
                 "CLOSED" if response is None else response)
        return response

    def timing(self, label: str, seconds: float, tolerance: float) -> None:
        self.transcript.timing(label, seconds, tolerance)

    def exchanges(self, suffix: str | None = None) -> list:
        prefix = self.names.prefix if suffix is None else self.client_id(suffix)
        return [e for e in self._watch.exchanges if e.client_id.startswith(prefix)]

    def add_outcomes(self, suffix: str, *, apis: tuple[int, ...] | None = None, label: str | None = None,
                     since: float | None = None) -> None:
        """What the client `suffix` was answered, as the set of distinct (API, version,
        errors) outcomes — how many times a client sends a request and in which order depends
        on its timers, so counts and interleaving are not compared ("repeats collapsed"); the
        errors are the answer's top-level code and any other code than NONE found deeper
        (how many partitions an answer lists is the client's timing too). `apis` limits it to
        those API keys, `since` to requests sent from then (time.monotonic())."""
        outcomes = set()
        for e in self.exchanges(suffix):
            if (apis is not None and e.api_key not in apis) or e.abandoned:
                continue        # a request the client gave up on (it closed) has no outcome
            if since is not None and e.sent_at < since:
                continue
            if e.answered_at is None and not e.closed:
                continue        # no answer expected (a Produce with acks=0) or none yet
            api = SUPPORTED_APIS.get(e.api_key)
            name = api.name if api else f"api{e.api_key}"
            said = "CLOSED" if e.closed else summary(e.errors, errors_only=True)
            if said in _TIMING_OUTCOMES.get(e.api_key, ()):
                continue        # "heartbeat timing", "rebalance rounds" (see NORMALIZATIONS)
            outcomes.add(f"{name} v{e.version} {said}")
        self.add(label or f"outcomes of {suffix}", sorted(outcomes))

    async def close(self) -> None:
        for client in self._raws:
            await client.close()
        self.side.proxy.unwatch(self._watch)
        await self._delete_groups()

    async def _delete_groups(self) -> None:
        """Delete, where the broker lets it, every group this run created (its names carry
        the run's prefix). Brokers are shared by many scenarios and tests: a group left
        behind in a state no client would leave it in (a JoinGroup with an empty protocol
        type) made `kafka-consumer-groups --describe --all-groups` fail as a whole on the
        shared reference Kafka. Best effort, unrecorded: a group that still has members
        (NON_EMPTY_GROUP) expires as usual."""
        try:
            async with asyncio.timeout(5):
                client = await RawClient.open(self.side.direct, "kgroup-conformance-cleanup")
                try:
                    listed = await client.call(request("ListGroups", 5, states_filter=[], types_filter=[]))
                    mine = [g.group_id for g in listed.groups if g.group_id.startswith(self.names.prefix + "-")]
                    if mine:
                        await client.call(request("DeleteGroups", 2, groups_names=mine))
                finally:
                    await client.close()
        except Exception:  # noqa: BLE001 (a cleanup must never turn a comparison into a failure)
            pass            # a broker that is gone or refuses keeps its groups


ScenarioFn = Callable[[Target], Awaitable[None]]


@dataclass
class Outcome:
    """One scenario run on both brokers."""

    comparison: Comparison
    transcripts: dict[str, Transcript]
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def agree(self) -> bool:
        return self.comparison.agree and not self.errors

    def explain(self) -> str:
        parts = [f"{side} failed: {err}" for side, err in self.errors.items()]
        if self.comparison.diff:
            parts.append(self.comparison.diff)
        return "\n".join(parts)


class Pair:
    """The reference side and the kgroup side of a comparison."""

    def __init__(self, kafka: Side, kgroup: Side, run: str | None = None) -> None:
        self.kafka = kafka
        self.kgroup = kgroup
        self.run = run or uuid.uuid4().hex[:6]
        self.advertised: dict[str, dict[int, tuple[int, int]]] = {}
        self._runs: dict[str, int] = {}

    def names(self, scenario: str) -> Names:
        """Names for the next run of `scenario` (a second run in one pair gets new ones)."""
        names = self.next_names(scenario)
        self._runs[scenario] = self._runs.get(scenario, 0) + 1
        return names

    def next_names(self, scenario: str) -> Names:
        """The names the next run of `scenario` will use (without using them up)."""
        runs = self._runs.get(scenario, 0) + 1
        return Names(scenario.replace("_", "-"), self.run if runs == 1 else f"{self.run}r{runs}")

    def run_scenario(self, name: str, fn: ScenarioFn, timeout: float = SCENARIO_TIMEOUT,
                     sides: tuple[str, ...] = ("kafka", "kgroup"), known: tuple[str, ...] = ()) -> Outcome:
        """Run `fn` on both brokers at once; compare what each observed (`known`: the
        labels of an explained divergence, compared apart)."""
        names = self.names(name)
        transcripts: dict[str, Transcript] = {}
        errors: dict[str, str] = {}
        started = time.monotonic()

        def one(side: Side) -> None:
            target = Target(side, names)
            transcripts[side.name] = target.transcript

            async def go() -> None:
                try:
                    async with asyncio.timeout(timeout):
                        await fn(target)
                finally:
                    await target.close()

            try:
                asyncio.run(go())
            except BaseException as exc:  # noqa: BLE001 (reported as the side's failure)
                errors[side.name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                if not isinstance(exc, (AssertionError, TimeoutError)):
                    errors[side.name] += "\n" + "".join(traceback.format_tb(exc.__traceback__)[-3:])

        threads = [threading.Thread(target=one, args=(getattr(self, s),), name=f"scenario-{s}") for s in sides]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        comparison = compare(transcripts.get("kafka", Transcript()), transcripts.get("kgroup", Transcript()),
                             known=known)
        return Outcome(comparison, transcripts, errors, time.monotonic() - started)
