"""Client quotas in the broker (admin/client_quotas.py): kept in the data dir across a
restart and picked up by another node's copy, `on` only while a user or client-id quota is
set, and the throttle time of a client over its produce quota on a manual clock."""

from kgroup.broker.admin.client_quotas import ClientQuotas
from kgroup.core.quotas import CLIENT_ID, USER


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def test_quotas_survive_a_restart_and_reach_another_node(tmp_path):
    here, there = ClientQuotas(tmp_path), ClientQuotas(tmp_path)
    assert not here.on
    refused = here.alter([([(USER, "alice")], (("producer_byte_rate", 1024.0, False),)),
                          ([(USER, "alice")], (("nonsense", 1.0, False),)),
                          ([("ip", None)], (("connection_creation_rate", 5.0, False),))], validate_only=False)
    assert [r is None for r in refused] == [True, False, True]
    assert here.on
    assert there.refresh() and there.quotas == here.quotas
    assert ClientQuotas(tmp_path).quotas == {((USER, "alice"),): {"producer_byte_rate": 1024.0},
                                             (("ip", None),): {"connection_creation_rate": 5.0}}
    here.alter([([(USER, "alice")], (("producer_byte_rate", 0.0, True),))], validate_only=False)
    # An ip quota alone is kept but measures nothing on the request path.
    assert not ClientQuotas(tmp_path).on


def test_validate_only_writes_nothing(tmp_path):
    quotas = ClientQuotas(tmp_path)
    quotas.alter([([(CLIENT_ID, "c")], (("consumer_byte_rate", 10.0, False),))], validate_only=True)
    assert not (tmp_path / "configs" / "quotas.json").exists() and not quotas.on


def test_a_client_over_its_produce_quota_is_throttled_and_others_are_not(tmp_path):
    clock = Clock()
    quotas = ClientQuotas(tmp_path, clock=clock)
    quotas.alter([([(CLIENT_ID, "slow")], (("producer_byte_rate", 1000.0, False),))], validate_only=False)
    assert quotas.throttle_ms("ANONYMOUS", "slow", produced=5000, fetched=0, cpu_ns=0) == 0   # 5000 B / 10 s
    clock.now += 100
    # 15 000 B over 0.1 s plus ten assumed full windows: 10.1 s; (15000 - 10100) / 10100 * 10.1 s.
    assert quotas.throttle_ms("ANONYMOUS", "slow", produced=10_000, fetched=0, cpu_ns=0) == 4900
    assert quotas.throttle_ms("ANONYMOUS", "fast", produced=10 ** 9, fetched=0, cpu_ns=0) == 0
