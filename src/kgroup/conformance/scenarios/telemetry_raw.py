"""Client telemetry (KIP-714) and the client-metrics config resources behind it, asked with
exact requests: the subscriptions' validation (its texts compared too), DescribeConfigs and
ListConfigResources (KIP-1142) of them, GetTelemetrySubscriptions and PushTelemetry's answers
and errors. The subscription matches only this scenario's client ids, so no other client of
the shared brokers is subscribed."""

from __future__ import annotations

import uuid
from typing import Any

from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance import observe
from kgroup.conformance.target import Target

CLIENT_METRICS = 16
SET, DELETE, APPEND = 0, 1, 2
ZERO = uuid.UUID(int=0)


def _alter(name: str, *changes: tuple[str, int, str | None], validate_only: bool = False):
    return request("IncrementalAlterConfigs", 1, validate_only=validate_only, resources=[{
        "resource_type": CLIENT_METRICS, "resource_name": name,
        "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in changes]}])


def _describe(*names: str):
    return request("DescribeConfigs", 4, include_synonyms=True, include_documentation=True, resources=[
        {"resource_type": CLIENT_METRICS, "resource_name": n, "configuration_keys": None} for n in names])


def _get(instance: uuid.UUID | None = ZERO):
    return request("GetTelemetrySubscriptions", 0, client_instance_id=instance)


def _push(instance: uuid.UUID | None, subscription: int, *, terminating: bool = False, compression: int = 0,
          metrics: bytes = b""):
    return request("PushTelemetry", 0, client_instance_id=instance, subscription_id=subscription,
                   terminating=terminating, compression_type=compression, metrics=metrics)


async def _eventually(raw, req, done) -> Any:
    """`req` asked (unrecorded) until `done(answer)`; the last answer. Kafka applies a
    subscription through its controller, so right after an alter it may still answer as before."""
    last: list[Any] = []

    async def check() -> bool:
        last[:] = [await raw.call(req)]
        return bool(done(last[0]))
    await observe.until(check, "the change is visible")
    return last[0]


def _subscription(r: Any) -> dict[str, Any]:
    """A GetTelemetrySubscriptions answer, its random ids said as set or not."""
    return {"error_code": r.error_code, "client instance id set": r.client_instance_id not in (None, ZERO),
            "subscription id set": int(r.subscription_id) != 0,
            "accepted_compression_types": list(r.accepted_compression_types),
            "push_interval": r.push_interval, "telemetry_max_bytes": r.telemetry_max_bytes,
            "delta_temporality": r.delta_temporality, "requested_metrics": sorted(r.requested_metrics)}


@scenario("admin", "client-metrics subscriptions and telemetry pushes (KIP-714, KIP-1142)",
          rule="a CLIENT_METRICS resource takes metrics, interval.ms (100 ms to 1 hour) and match "
               "(selector=regex over Kafka's six selectors), refusing others with Kafka's texts, and no "
               "APPEND/SUBTRACT; described with every key (unset ones at their defaults); listed by "
               "ListConfigResources v0 and v1; GetTelemetrySubscriptions gives a new instance its id, the matching "
               "subscriptions' metrics and lowest interval, and THROTTLING_QUOTA_EXCEEDED before the interval; "
               "PushTelemetry refuses a wrong subscription id, an unknown codec, a payload over the limit, a push "
               "before the interval, one after a terminating push and a zero instance id; a changed subscription "
               "gives a client a new subscription id at once")
async def admin_client_telemetry(t: Target) -> None:
    raw = await t.raw("tele")
    name = t.names.group("cm")
    mine = f"{t.client_id('tele')[:-len('tele')]}.*"
    ok = await t.ask(raw, "a subscription", _alter(name, ("metrics", SET, "org.apache.kafka.consumer., a.b"),
                                                   ("interval.ms", SET, "60000"), ("match", SET, f"client_id={mine}")))
    for label, changes in (("interval below 100", (("interval.ms", SET, "10"),)),
                           ("interval not a number", (("interval.ms", SET, "often"),)),
                           ("an unknown key", (("color", SET, "blue"),)),
                           ("an unknown selector", (("match", SET, "client_name=x"),)),
                           ("a selector without a value", (("match", SET, "client_id"),)),
                           ("a bad regex", (("match", SET, "client_id=[a"),)),
                           ("APPEND to metrics", (("metrics", APPEND, "x."),))):
        r = (await raw.call(_alter(name, *changes, validate_only=True))).responses[0]
        t.add(f"refused: {label}", {"error_code": r.error_code, "text": r.error_message})
    r = (await raw.call(_alter("", ("interval.ms", SET, "1000")))).responses[0]
    t.add("refused: an empty name", {"error_code": r.error_code, "text": r.error_message})
    await t.ask(raw, "validate only", _alter(f"{name}-v", ("interval.ms", SET, "2000"), validate_only=True))
    await _eventually(raw, _describe(name), lambda r: r.results[0].configs[0].config_source == 7)
    await t.ask(raw, "describe it and one that does not exist", _describe(name, f"{name}-none"))
    r = (await raw.call(_describe(""))).results[0]
    t.add("describe an empty name", {"error_code": r.error_code, "text": r.error_message})
    for version, fields in ((0, {}), (1, {"resource_types": [CLIENT_METRICS]})):
        listed = await _eventually(raw, request("ListConfigResources", version, **fields),
                               lambda r: any(c.resource_name == name for c in r.config_resources))
        t.add(f"ListConfigResources v{version}", {"error_code": listed.error_code, "ours": [
            c.resource_name for c in listed.config_resources if c.resource_name.startswith(name)]})
    t.add("ListConfigResources v1 of an unknown type",
          (await raw.call(request("ListConfigResources", 1, resource_types=[99]))).error_code)
    if ok is None or ok.responses[0].error_code:
        return
    first = await raw.call(_get())
    t.add("a new client's subscription", _subscription(first))
    t.add("asked again before the interval", _subscription(await raw.call(_get(first.client_instance_id))))
    instance, sub = first.client_instance_id, int(first.subscription_id)
    for label, push in (("a wrong subscription id", lambda i, s: _push(i, s + 1)),
                        ("an unknown codec", lambda i, s: _push(i, s, compression=9)),
                        ("a payload over the limit", lambda i, s: _push(i, s, metrics=b"\0" * ((1 << 20) + 1)))):
        fresh = await raw.call(_get())
        await t.ask(raw, f"push with {label}", push(fresh.client_instance_id, int(fresh.subscription_id)))
    await t.ask(raw, "push (empty)", _push(instance, sub))
    await t.ask(raw, "push again before the interval", _push(instance, sub))
    await t.ask(raw, "a terminating push", _push(instance, sub, terminating=True))
    await t.ask(raw, "push after terminating", _push(instance, sub))
    await t.ask(raw, "push with the zero instance id", _push(ZERO, sub))
    second = await raw.call(_get())
    await t.ask(raw, "a shorter interval", _alter(name, ("interval.ms", SET, "30000")))
    changed = await _eventually(raw, _get(second.client_instance_id), lambda r: r.error_code == 0)
    t.add("after the change", {**_subscription(changed),
                               "subscription id changed": int(changed.subscription_id) != int(second.subscription_id)})
    await t.ask(raw, "delete the subscription", _alter(name, ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                                       ("match", DELETE, None)))
