"""`GET /metrics`: the coordinator in Prometheus text format.

One custom collector reads everything at scrape time — the groups from the coordinator
(group_view.py), rebalances from the group timelines, lag from the logs, and the plain
counters the broker bumps inline (request_stats.py) — so nothing here runs per request.
Exposition is prometheus_client's own (`generate_latest`), with its process collector
(CPU, memory, open files) beside ours.

Names follow Prometheus' conventions (tests/integration/test_group_kinds_everywhere.py
checks them on a scrape): counters end in `_total`, histograms in their unit, and no gauge
ends in a suffix the exposition format gives to counters, histograms and summaries (`_sum`,
`_count`, `_bucket`, `_total`). The group kind is the label `kind` wherever it appears
(classic, consumer, share, streams: the registry's names, as in /api); an event's kind is
`event`.

| metric | type | labels |
|---|---|---|
| kgroup_groups | gauge | kind, state |
| kgroup_group_members | gauge | group, kind |
| kgroup_group_generation | gauge | group, kind (classic generation or group epoch) |
| kgroup_rebalances_total | counter | group |
| kgroup_rebalance_duration_seconds | histogram | kind |
| kgroup_partitions_moved_total | counter | group |
| kgroup_group_lag | gauge | group, topic, partition |
| kgroup_group_total_lag | gauge | group |
| kgroup_group_events_total | counter | event |
| kgroup_requests_total | counter | api, error |
| kgroup_fsync_duration_seconds | histogram | |
| kgroup_client_telemetry_clients | gauge | (client instances pushing metrics, KIP-714) |
| kgroup_client_metric | gauge | client_id, client_instance_id, group, metric (a few key metrics of each pushing client: telemetry_view.py) |
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from kgroup.broker.observe.console import telemetry_view
from kgroup.error_codes import ErrorCode
from kgroup.group_types import GROUP_TYPES
from kgroup.wire.api_keys import ApiKey

if TYPE_CHECKING:
    from kgroup.broker.observe.console.app import Console

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Every kind's states, so each series exists (at 0) before a group is in it.
STATES = {kind.name: list(kind.states) for kind in GROUP_TYPES}


class CoordinatorCollector(Collector):
    def __init__(self, console: Console) -> None:
        self.console = console

    def collect(self) -> Iterator[Metric]:
        c = self.console
        summaries = c.views.summaries()
        groups = GaugeMetricFamily("kgroup_groups", "Groups by kind and state.", labels=["kind", "state"])
        counts = {(kind, state): 0 for kind, states in STATES.items() for state in states}
        for s in summaries:
            counts[(s.kind, s.state)] = counts.get((s.kind, s.state), 0) + 1
        for (kind, state), n in sorted(counts.items()):
            groups.add_metric([kind, state], n)
        yield groups

        members = GaugeMetricFamily("kgroup_group_members", "Members of each group.", labels=["group", "kind"])
        generation = GaugeMetricFamily("kgroup_group_generation",
                                       "Generation (classic) or group epoch (the other kinds) of each group.",
                                       labels=["group", "kind"])
        rebalances = CounterMetricFamily("kgroup_rebalances", "Rebalances completed by each group.",
                                         labels=["group"])
        moved = CounterMetricFamily("kgroup_partitions_moved",
                                    "Partitions handed to another member than their last owner.", labels=["group"])
        history = c.observer.history.groups
        for s in summaries:
            members.add_metric([s.group_id, s.kind], s.members)
            generation.add_metric([s.group_id, s.kind], s.generation)
            t = history.get(s.group_id)
            rebalances.add_metric([s.group_id], t.rebalance_count if t is not None else 0)
            moved.add_metric([s.group_id], t.moved_count if t is not None else 0)
        yield from (members, generation, rebalances, moved)

        duration = HistogramMetricFamily("kgroup_rebalance_duration_seconds",
                                         "How long rebalances took, from start to completion.", labels=["kind"])
        for kind, buckets in sorted(c.observer.rebalance_seconds.items()):
            duration.add_metric([kind], buckets.cumulative(), buckets.sum)
        yield duration

        lag = GaugeMetricFamily("kgroup_group_lag", "Log end offset minus committed offset.",
                                labels=["group", "topic", "partition"])
        total_lag = GaugeMetricFamily("kgroup_group_total_lag", "Lag of each group over all its partitions.",
                                      labels=["group"])
        for group, partitions in sorted(c.lag.now().items()):
            for (topic, partition), behind in sorted(partitions.items()):
                lag.add_metric([group, topic, str(partition)], behind)
            total_lag.add_metric([group], sum(partitions.values()))
        yield from (lag, total_lag)

        events = CounterMetricFamily("kgroup_group_events", "Group events derived, by event.", labels=["event"])
        for event, n in sorted(c.observer.events_seen.items()):
            events.add_metric([event], n)
        yield events

        requests = CounterMetricFamily("kgroup_requests", "Requests answered, by API and top-level error code.",
                                       labels=["api", "error"])
        for (api, error), n in sorted(c.request_stats.counts().items()):
            name = ApiKey(api).kafka_name if api in ApiKey._value2member_map_ else str(api)
            requests.add_metric([name, ErrorCode(error).name], n)
        yield requests

        fsync = HistogramMetricFamily("kgroup_fsync_duration_seconds", "How long each fsync of a log took.")
        fsync.add_metric([], c.fsync_seconds.cumulative(), c.fsync_seconds.sum)
        yield fsync
        if c.telemetry is not None:
            yield from _client_metrics(c)


def _client_metrics(c: Console) -> Iterator[Metric]:
    """KIP-714: a few key metrics of each client pushing them, its group when a member's
    client id and host are its own. Bounded: the key metrics only (KEY_METRICS), of the
    `MAX_SERIES_CLIENTS` clients that pushed last."""
    c.telemetry.expire(c.clock())
    clients = c.telemetry.pushing()
    count = GaugeMetricFamily("kgroup_client_telemetry_clients", "Client instances pushing metrics (KIP-714).")
    count.add_metric([], len(clients))
    yield count
    values = GaugeMetricFamily("kgroup_client_metric", "Key metrics pushed by clients (KIP-714), by client.",
                               labels=["client_id", "client_instance_id", "group", "metric"])
    by_client = telemetry_view.members(c.views)
    for client in clients[:telemetry_view.MAX_SERIES_CLIENTS]:
        member = telemetry_view.member_of(client, by_client)
        for metric, value in sorted(client.key_metrics().items()):
            values.add_metric([client.client_id or "", str(client.instance_id), member[0] if member else "",
                               metric], value)
    yield values


def registry_for(console: Console) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CoordinatorCollector(console))
    ProcessCollector(registry=registry)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
