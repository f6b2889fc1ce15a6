"""Client quotas' pure core (core/quotas.py): Kafka's sampled rate and throttle time on a
manual clock, the precedence of quota entities, AlterClientQuotas' checks and
DescribeClientQuotas' filters."""

import pytest

from kgroup.core.quotas import (ANY, CLIENT_ID, DEFAULT, EXACT, INVALID_REQUEST, UNSUPPORTED_VERSION, USER,
                                QuotaRefused, Rate, check_op, describe_filter, entity_of, matches, quota_for)

T0 = 1_000_000


def test_a_first_burst_is_measured_over_the_whole_span():
    rate = Rate(T0)
    rate.record(10_000, T0)
    # 10 full windows are assumed (quota.window.num - 1): 10 000 bytes over 10 s.
    assert rate.rate(T0) == pytest.approx(1000.0)
    assert rate.throttle_ms(1000.0, T0) == 0
    assert rate.throttle_ms(500.0, T0) == 10_000     # (1000 - 500) / 500 * 10 s


def test_the_throttle_time_is_kafkas():
    rate, now = Rate(T0), T0
    for _ in range(30):                 # 2000 bytes every 100 ms for 3 s
        rate.record(2000, now)
        now += 100
    # 60 000 bytes over the minimum window of 10 s: 6000 B/s; (6000 - 5000) / 5000 * 10 s.
    assert rate.rate(now) == pytest.approx(6000.0)
    assert rate.throttle_ms(5000.0, now) == 2000


def test_a_client_that_waits_its_throttle_time_holds_the_quota():
    rate, now, sent, quota = Rate(T0), T0, 0, 5000.0
    while now < T0 + 120_000:           # a producer sending 2000 bytes as fast as it may
        rate.record(2000, now)
        sent += 2000
        now += max(rate.throttle_ms(quota, now), 10)
    assert sent / 120 == pytest.approx(quota, rel=0.10)


def test_the_throttle_time_is_capped_at_the_span_and_old_samples_expire():
    rate = Rate(T0)
    rate.record(10 ** 9, T0)
    assert rate.throttle_ms(1.0, T0) == 11_000
    assert rate.rate(T0 + 11_000) == 0.0
    assert rate.throttle_ms(1.0, T0 + 11_000) == 0


def test_precedence_of_quota_entities():
    quotas = {((CLIENT_ID, None),): {"producer_byte_rate": 1.0},
              ((CLIENT_ID, "c"),): {"producer_byte_rate": 2.0},
              ((USER, None),): {"producer_byte_rate": 3.0},
              ((CLIENT_ID, None), (USER, None)): {"producer_byte_rate": 4.0},
              ((USER, "u"),): {"producer_byte_rate": 5.0},
              ((CLIENT_ID, "c"), (USER, "u")): {"producer_byte_rate": 6.0}}
    assert quota_for(quotas, "producer_byte_rate", "u", "c") == (6.0, ((USER, "u"), (CLIENT_ID, "c")))
    assert quota_for(quotas, "producer_byte_rate", "u", "other") == (5.0, ((USER, "u"),))
    assert quota_for(quotas, "producer_byte_rate", "v", "c") == (4.0, ((USER, "v"), (CLIENT_ID, "c")))
    del quotas[((CLIENT_ID, None), (USER, None))]
    assert quota_for(quotas, "producer_byte_rate", "v", "c") == (3.0, ((USER, "v"),))
    del quotas[((USER, None),)]
    assert quota_for(quotas, "producer_byte_rate", "v", "c") == (2.0, ((CLIENT_ID, "c"),))
    assert quota_for(quotas, "producer_byte_rate", "v", "d") == (1.0, ((CLIENT_ID, "d"),))
    assert quota_for(quotas, "consumer_byte_rate", "v", "d") is None


@pytest.mark.parametrize("components, key, value", [
    ((), "producer_byte_rate", 1.0),
    (((USER, ""),), "producer_byte_rate", 1.0),
    (((USER, "u"),), "producer_byte_rate", 0.0),
    ((("group", "g"),), "producer_byte_rate", 1.0),
    (((USER, "u"), ("ip", "1.2.3.4")), "producer_byte_rate", 1.0),
    ((("ip", "nope"),), "connection_creation_rate", 1.0),
    ((("ip", "1.2.3.4"),), "producer_byte_rate", 1.0),
    (((USER, "u"),), "connection_creation_rate", 1.0),
    (((USER, "u"),), "nonsense", 1.0),
    (((USER, "u"),), "producer_byte_rate", -1.0),
    (((USER, "u"),), "producer_byte_rate", 1.5),
])
def test_alter_refusals(components, key, value):
    with pytest.raises(QuotaRefused) as refused:
        check_op(entity_of(components), key, value, False)
    assert refused.value.code == INVALID_REQUEST


def test_a_fractional_request_percentage_passes():
    check_op(entity_of([(USER, "u")]), "request_percentage", 12.5, False)


def test_describe_filters():
    u, uc, udef = ((USER, "u"),), ((CLIENT_ID, "c"), (USER, "u")), ((CLIENT_ID, None), (USER, "u"))
    by_user = describe_filter([(USER, EXACT, "u")], strict=False)
    assert [matches(by_user, e) for e in (u, uc, udef)] == [True, True, True]
    strictly = describe_filter([(USER, EXACT, "u")], strict=True)
    assert [matches(strictly, e) for e in (u, uc, udef)] == [True, False, False]
    any_client = describe_filter([(USER, EXACT, "u"), (CLIENT_ID, ANY, None)], strict=False)
    assert [matches(any_client, e) for e in (u, uc, udef)] == [False, True, True]
    default_client = describe_filter([(USER, EXACT, "u"), (CLIENT_ID, DEFAULT, None)], strict=True)
    assert [matches(default_client, e) for e in (u, uc, udef)] == [False, False, True]
    for bad, code in ((([(USER, DEFAULT, "u")]), INVALID_REQUEST), (([(USER, EXACT, None)]), INVALID_REQUEST),
                      (([(USER, EXACT, "u"), (USER, ANY, None)]), INVALID_REQUEST),
                      (([("group", EXACT, "g")]), UNSUPPORTED_VERSION), (([(USER, 7, "u")]), INVALID_REQUEST),
                      (([(USER, EXACT, "u"), ("ip", ANY, None)]), INVALID_REQUEST)):
        with pytest.raises(QuotaRefused) as refused:
            describe_filter(bad, strict=False)
        assert refused.value.code == code


def test_answers_in_the_order_kafka_4_4_gave():
    # Two AlterClientQuotas answers of the reference broker (the wire checks' examples): an
    # entity's components come in the order of a HashMap made for their number.
    from kgroup.core.quotas import kafka_answer_order, kafka_entity_order

    for run, first in (("e5a5dd", 1), ("405725", 0)):
        x, y = f"cfw-{run}-x", f"cfw-{run}-" + "y" * 40
        assert kafka_entity_order([(y, None), (x, "")])[0] == first
    # ... and the entries in that of a default HashMap keyed by entity.
    assert kafka_answer_order([[], [("cfw-e5a5dd-x", None)]]) == [1, 0]
